// The Kubernetes manifests parsed strictly into the API types, and the
// invariants between them, the image (tools/ociimage/spec), the example
// definitions and the plugins' declared configuration.
package kubernetes_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/plugins/redshift"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/tools/ociimage/spec"
)

// kustomization is the part of kustomize's Kustomization these use; any
// other field fails the strict parse.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images"`
}

type manifests struct {
	kust       kustomization
	deployment appsv1.Deployment
	configMap  corev1.ConfigMap
	secret     corev1.Secret // secret.example.yaml
	pdb        policyv1.PodDisruptionBudget
	files      map[string]string // kind → file
}

// load parses every YAML file here, each document strictly into the type
// its kind names: an unknown or misspelt field fails.
func load(t *testing.T) manifests {
	t.Helper()
	paths, err := filepath.Glob("*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var m manifests
	m.files = map[string]string{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(raw, []byte("\n---\n")) {
			var meta struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s document %d: %v", p, i, err)
			}
			var into any
			switch meta.Kind {
			case "Kustomization":
				into = &m.kust
			case "Deployment":
				into = &m.deployment
			case "ConfigMap":
				into = &m.configMap
			case "Secret":
				into = &m.secret
			case "PodDisruptionBudget":
				into = &m.pdb
			default:
				t.Fatalf("%s document %d: kind %q has no check here", p, i, meta.Kind)
			}
			if _, dup := m.files[meta.Kind]; dup {
				t.Fatalf("%s: a second %s", p, meta.Kind)
			}
			m.files[meta.Kind] = p
			if err := yaml.UnmarshalStrict(doc, into); err != nil {
				t.Fatalf("%s document %d (%s): %v", p, i, meta.Kind, err)
			}
		}
	}
	for _, kind := range []string{"Kustomization", "Deployment", "ConfigMap", "Secret", "PodDisruptionBudget"} {
		if m.files[kind] == "" {
			t.Fatalf("no %s manifest", kind)
		}
	}
	return m
}

func container(t *testing.T, d appsv1.Deployment) corev1.Container {
	t.Helper()
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%d containers, want 1", n)
	}
	return d.Spec.Template.Spec.Containers[0]
}

// The kustomization lists every manifest but the example Secret (applying
// must never overwrite real credentials with placeholders), and names the
// image the Deployment runs.
func TestKustomization(t *testing.T) {
	m := load(t)
	if m.kust.APIVersion != "kustomize.config.k8s.io/v1beta1" {
		t.Errorf("kustomization apiVersion %q", m.kust.APIVersion)
	}
	var want []string
	for kind, f := range m.files {
		if kind != "Kustomization" && kind != "Secret" {
			want = append(want, f)
		}
	}
	if slices.Sort(want); !slices.Equal(slices.Sorted(slices.Values(m.kust.Resources)), want) {
		t.Errorf("kustomization resources %v, want %v", m.kust.Resources, want)
	}
	if slices.Contains(m.kust.Resources, m.files["Secret"]) {
		t.Errorf("the example Secret %s is applied", m.files["Secret"])
	}
	image := container(t, m.deployment).Image
	name, _, _ := strings.Cut(image, ":")
	if name != spec.Repository || len(m.kust.Images) != 1 || m.kust.Images[0].Name != spec.Repository {
		t.Errorf("Deployment image %q, kustomization images %+v, want %s", image, m.kust.Images, spec.Repository)
	}
}

// Several replicas in one group, the PDB over the same pods, probes and
// scrape annotations on the port the image serves, the definitions where
// the image reads them, non-root and read-only, a grace period above the
// shutdown timeout, resources requested.
func TestDeployment(t *testing.T) {
	m := load(t)
	d := m.deployment
	pod := d.Spec.Template
	c := container(t, d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("replicas %v, want several", d.Spec.Replicas)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod labels %v", k, v, pod.Labels)
		}
	}
	for k, v := range m.pdb.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("PDB selector %s=%s does not match the pod labels %v", k, v, pod.Labels)
		}
	}
	if mu := m.pdb.Spec.MaxUnavailable; mu == nil || mu.IntValue() < 1 || int32(mu.IntValue()) >= *d.Spec.Replicas {
		t.Errorf("PDB maxUnavailable %v with %d replicas", mu, *d.Spec.Replicas)
	}

	// The image's entrypoint serves --http on spec.HTTPPort.
	if len(c.Command) != 0 {
		t.Errorf("command %v replaces the image's entrypoint %v", c.Command, spec.Entrypoint())
	}
	var port corev1.ContainerPort
	for _, p := range c.Ports {
		if p.ContainerPort == spec.HTTPPort {
			port = p
		}
	}
	if port.Name == "" {
		t.Fatalf("no named container port %d: %+v", spec.HTTPPort, c.Ports)
	}
	for path, probe := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("no HTTP probe for %s", path)
			continue
		}
		g := probe.HTTPGet
		if g.Path != path || (g.Port.String() != port.Name && g.Port.IntValue() != spec.HTTPPort) {
			t.Errorf("probe %s on %s port %s, want port %s (%d)", path, g.Path, g.Port.String(), port.Name, spec.HTTPPort)
		}
	}
	a := pod.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != strconv.Itoa(spec.HTTPPort) || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("scrape annotations %v", a)
	}

	// Arguments: flags, then the definitions directory, where the
	// ConfigMap is mounted.
	if len(c.Args) == 0 || c.Args[len(c.Args)-1] != spec.DefinitionsDir {
		t.Errorf("args %v do not end with %s", c.Args, spec.DefinitionsDir)
	}
	var mounted bool
	for _, vm := range c.VolumeMounts {
		if vm.MountPath != spec.DefinitionsDir {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil && v.ConfigMap.Name == m.configMap.Name {
				mounted = vm.ReadOnly
			}
		}
	}
	if !mounted {
		t.Errorf("ConfigMap %s not mounted read-only at %s", m.configMap.Name, spec.DefinitionsDir)
	}

	// Shutdown: the kubelet's SIGKILL comes after --shutdown-timeout.
	timeout := 30 * time.Second // picomq-connect's default
	if i := slices.Index(c.Args, "--shutdown-timeout"); i >= 0 && i+1 < len(c.Args) {
		var err error
		if timeout, err = time.ParseDuration(c.Args[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	grace := pod.Spec.TerminationGracePeriodSeconds
	if grace == nil {
		t.Errorf("no terminationGracePeriodSeconds (default 30 s) above --shutdown-timeout %v", timeout)
	} else if time.Duration(*grace)*time.Second <= timeout {
		t.Errorf("terminationGracePeriodSeconds %d not above --shutdown-timeout %v", *grace, timeout)
	}

	psc, sc := pod.Spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != spec.UID {
		t.Errorf("pod securityContext %+v, want runAsNonRoot and user %d", psc, spec.UID)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext %+v, want readOnlyRootFilesystem and no privilege escalation", sc)
	}
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() {
		t.Errorf("resource requests %v", req)
	}
	if l := lim.Memory(); !l.IsZero() && l.Cmp(*req.Memory()) < 0 {
		t.Errorf("memory limit %v below the request %v", l, req.Memory())
	}
}

// The ConfigMap holds the example definitions unchanged, and every
// environment override of the Deployment names a definition's key and a
// key its plugin declares; secret keys come only from the Secret, whose
// example lists every key referenced. With the overrides, each
// definition passes the checks the plugin's open applies.
func TestDefinitionsAndSecrets(t *testing.T) {
	m := load(t)
	examples, err := filepath.Glob("../../examples/definitions/*.toml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no example definitions: %v", err)
	}
	if len(m.configMap.Data) != len(examples) {
		t.Errorf("ConfigMap holds %d files, examples/definitions %d", len(m.configMap.Data), len(examples))
	}
	fields := map[string][]sdk.Field{
		"libpicomq_connector_delta_sink":    schema[delta.Config](t),
		"libpicomq_connector_redshift_sink": schema[redshift.Config](t),
	}
	defs := map[string]*definition.Definition{} // by EnvPrefix
	for _, p := range examples {
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		if got := m.configMap.Data[name]; got != string(want) {
			t.Errorf("ConfigMap %s differs from %s", name, p)
		}
		d, err := definition.Parse(name, want)
		if err != nil {
			t.Fatal(err)
		}
		if fields[d.Path] == nil {
			t.Fatalf("%s: no declaration known for path %q", name, d.Path)
		}
		defs[sdk.EnvPrefix(d.Key)] = d
	}

	c := container(t, m.deployment)
	envs := map[string][]string{} // by EnvPrefix: NAME=value, secrets with a placeholder
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Name, "PICOMQ_CONNECTORS_SINK_") {
			continue
		}
		var d *definition.Definition
		var field string
		for prefix, def := range defs {
			if rest, ok := strings.CutPrefix(e.Name, prefix); ok {
				d, field = def, strings.ToLower(rest)
			}
		}
		if d == nil {
			t.Errorf("%s names no example definition's key", e.Name)
			continue
		}
		i := slices.IndexFunc(fields[d.Path], func(f sdk.Field) bool { return f.Key == field })
		if i < 0 {
			t.Errorf("%s: %s declares no plugin_config key %q", e.Name, d.Path, field)
			continue
		}
		value := e.Value
		switch f := fields[d.Path][i]; {
		case f.Secret && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil):
			t.Errorf("%s: secret key %q not from a Secret", e.Name, field)
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, ok := m.secret.StringData[ref.Key]
			if ref.Name != m.secret.Name || !ok {
				t.Errorf("%s: Secret %s key %s is not in %s", e.Name, ref.Name, ref.Key, m.files["Secret"])
			}
			value = v
		}
		envs[sdk.EnvPrefix(d.Key)] = append(envs[sdk.EnvPrefix(d.Key)], e.Name+"="+value)
	}
	for prefix, d := range defs {
		if len(envs[prefix]) == 0 {
			t.Errorf("no environment override for sink %s", d.Key)
		}
		js, err := d.OpenConfig()
		if err != nil {
			t.Fatal(err)
		}
		var open struct {
			PluginConfig json.RawMessage `json:"plugin_config"`
		}
		if err := json.Unmarshal(js, &open); err != nil {
			t.Fatal(err)
		}
		if problems := sdk.CheckConfig(fields[d.Path], open.PluginConfig, d.Key, sdk.EnvFrom(envs[prefix])); len(problems) > 0 {
			t.Errorf("sink %s with the Deployment's environment: %s", d.Key, strings.Join(problems, "; "))
		}
	}
}

func schema[C any](t *testing.T) []sdk.Field {
	t.Helper()
	s, err := sdk.SchemaOf[C]()
	if err != nil {
		t.Fatal(fmt.Errorf("%T: %w", *new(C), err))
	}
	return s.Fields
}
