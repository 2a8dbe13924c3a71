package release_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// version is what the tests release; the suffix exercises the x.y.z-suffix form.
const version = "1.2.3-test.1"

const modulePath = "github.com/picomq/heavy-sinks"

// goArtifacts are the Go programs in a release, each with the main package
// built into it; they and picomq-host are the executables.
var goArtifacts = map[string]string{
	"libpicomq_connector_delta_sink.so":    modulePath + "/plugins/delta/cmd/sink",
	"libpicomq_connector_redshift_sink.so": modulePath + "/plugins/redshift/cmd/sink",
	"picomq-connect":                       modulePath + "/cmd/picomq-connect",
}

// contents is every entry of a release directory, in tar order.
var contents = []string{
	"",
	"MANIFEST.txt",
	"SHA256SUMS",
	"include/",
	"include/picomq_sink.h",
	"libpicomq_connector_delta_sink.so",
	"libpicomq_connector_redshift_sink.so",
	"picomq-connect",
	"picomq-host",
	"sbom/",
	"sbom/libpicomq_connector_delta_sink.cdx.json",
	"sbom/libpicomq_connector_redshift_sink.cdx.json",
	"sbom/picomq-connect.cdx.json",
}

var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// shared is the amd64 release of the working tree that TestReleaseTarball
// checks and TestImage packages, built once per test run (a release build
// is most of either test's time); TestMain removes it.
var shared struct {
	once    sync.Once
	dir     string
	tarball string // set once built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedRelease returns the shared release tarball, building it first.
func sharedRelease(t *testing.T) string {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "picomq-release-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir = dir
		// From the working tree, so that the script under test is the one being edited.
		release(t, repoRoot(t), dir, "amd64", "RELEASE_ALLOW_DIRTY=1")
		shared.tarball = filepath.Join(dir, "picomq-heavy-sinks-"+version+"-linux-amd64.tar.gz")
	})
	if shared.tarball == "" {
		t.Fatal("the release build failed (in this test or an earlier one)")
	}
	return shared.tarball
}

func TestReleaseTarball(t *testing.T) {
	root := repoRoot(t)
	tarball := sharedRelease(t)
	out := filepath.Dir(tarball)
	files := inspect(t, tarball, "amd64", root)
	run(t, files, "amd64")
	sums, err := os.ReadFile(filepath.Join(out, "picomq-heavy-sinks-"+version+".SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256Hex(readFile(t, tarball)) + "  " + filepath.Base(tarball) + "\n"; string(sums) != want {
		t.Fatalf("tarball SHA256SUMS\n%s\nwant\n%s", sums, want)
	}
}

func TestReleaseReproducible(t *testing.T) {
	if os.Getenv("PICOMQ_RELEASE_CHECK") != "1" {
		t.Skip("four release builds (amd64 and arm64, twice, one with a cold build cache): `make release-check` runs this")
	}
	root := repoRoot(t)
	base := t.TempDir()
	// Different absolute paths and path lengths; the second build compiles
	// everything afresh in an empty build cache.
	srcA := filepath.Join(base, "a")
	srcB := filepath.Join(base, "second", "checkout-of-heavy-sinks")
	commit := git(t, root, "rev-parse", "HEAD")
	for _, src := range []string{srcA, srcB} {
		git(t, root, "clone", "-q", "--no-checkout", root, src)
		git(t, src, "checkout", "-q", commit)
	}
	outA, outB := filepath.Join(base, "out-a"), filepath.Join(base, "out-b")
	release(t, srcA, outA, "amd64 arm64")
	release(t, srcB, outB, "amd64 arm64", "GOCACHE="+filepath.Join(base, "gocache-b"))

	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, e := range entries {
			n = append(n, e.Name())
		}
		return n
	}
	if a, b := names(outA), names(outB); !slices.Equal(a, b) || len(a) != 3 {
		t.Fatalf("outputs differ or are incomplete: %v and %v", a, b)
	}
	for _, name := range names(outA) {
		a, b := readFile(t, filepath.Join(outA, name)), readFile(t, filepath.Join(outB, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the two builds: %s", name, diffTarballs(t, a, b))
		}
	}
	for arch := range machines {
		t.Run(arch, func(t *testing.T) {
			tarball := filepath.Join(outB, "picomq-heavy-sinks-"+version+"-linux-"+arch+".tar.gz")
			run(t, inspect(t, tarball, arch, srcB), arch)
		})
	}
}

// release runs buildscripts/release.sh of the checkout src.
func release(t *testing.T, src, out, arches string, env ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(src, "buildscripts", "release.sh"))
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "VERSION="+version, "RELEASE_ARCHES="+arches, "RELEASE_OUT="+out,
		"RELEASE_TOOLS="+filepath.Join(repoRoot(t), ".cache", "tools"))
	cmd.Env = append(cmd.Env, env...)
	start := time.Now()
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("release.sh in %s: %v\n%s", src, err, output)
	}
	t.Logf("release.sh in %s (%s, %.0fs CPU):\n%s", src, time.Since(start).Round(time.Second),
		(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(), output)
}

// inspect checks a tarball's layout and every file in it without running
// anything, and returns its files by name relative to the release directory.
func inspect(t *testing.T, tarball, arch, src string) map[string][]byte {
	t.Helper()
	prefix := strings.TrimSuffix(filepath.Base(tarball), ".tar.gz") + "/"
	commitTime, err := strconv.ParseInt(git(t, src, "log", "-1", "--format=%ct", "HEAD"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	files := map[string][]byte{}
	var names []string
	gz, err := gzip.NewReader(bytes.NewReader(readFile(t, tarball)))
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() {
		t.Errorf("gzip header records name %q, time %v", gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(h.Name, prefix)
		if !ok && h.Name+"/" != prefix {
			t.Fatalf("entry %q outside %s", h.Name, prefix)
		}
		names = append(names, name)
		wantMode := int64(0o644)
		if h.Typeflag == tar.TypeDir || goArtifacts[name] != "" || name == "picomq-host" {
			wantMode = 0o755
		}
		if h.Uid != 0 || h.Gid != 0 || h.Mode != wantMode || h.ModTime.Unix() != commitTime {
			t.Errorf("%s: uid %d gid %d mode %o mtime %d, want 0 0 %o %d (the commit's)", h.Name, h.Uid, h.Gid, h.Mode, h.ModTime.Unix(), wantMode, commitTime)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[name] = b
		} else if h.Typeflag != tar.TypeDir {
			t.Errorf("%s: type %c", h.Name, h.Typeflag)
		}
	}
	if !slices.Equal(names, contents) {
		t.Fatalf("tar entries (in order)\n%q\nwant\n%q", names, contents)
	}

	// SHA256SUMS covers every other file.
	var sums []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if name != "SHA256SUMS" {
			sums = append(sums, sha256Hex(files[name])+"  "+name)
		}
	}
	if got, want := string(files["SHA256SUMS"]), strings.Join(sums, "\n")+"\n"; got != want {
		t.Errorf("SHA256SUMS\n%s\nwant\n%s", got, want)
	}
	if !bytes.Equal(files["include/picomq_sink.h"], readFile(t, filepath.Join(src, "include", "picomq_sink.h"))) {
		t.Error("include/picomq_sink.h is not the repository's")
	}
	for name, b := range files {
		if bytes.Contains(b, []byte(src)) {
			t.Errorf("%s contains the build directory %s", name, src)
		}
	}

	manifest := string(files["MANIFEST.txt"])
	for _, line := range []string{
		"version:  " + version,
		"commit:   " + git(t, src, "rev-parse", "HEAD"),
		"go:       " + runtime.Version(),
		"glibc:    >= " + glibcFloor(t, files, arch),
	} {
		if !strings.Contains(manifest, "\n"+line+"\n") && !strings.Contains(manifest, "\n"+line+" ") {
			t.Errorf("MANIFEST.txt lacks %q:\n%s", line, manifest)
		}
	}

	header := string(files["include/picomq_sink.h"])
	buildList := modules(t, src)
	for _, name := range append(slices.Sorted(maps.Keys(goArtifacts)), "picomq-host") {
		f, err := elf.NewFile(bytes.NewReader(files[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Machine != machines[arch] {
			t.Errorf("%s: machine %v, want %v", name, f.Machine, machines[arch])
		}
		for _, s := range f.Sections {
			if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug") {
				t.Errorf("%s is not stripped: it has %s", name, s.Name)
			}
		}
		if strings.HasSuffix(name, ".so") {
			checkExports(t, name, f, header)
		}
		if name == "picomq-connect" && slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
			t.Errorf("picomq-connect is dynamically linked; it must run without any libc")
		}
		if main := goArtifacts[name]; main != "" {
			checkBuildInfo(t, name, files, arch, main, buildList, manifest)
		}
	}
	return files
}

// checkExports compares the library's exported picomq_* functions with the
// functions include/picomq_sink.h declares plus the picomq_sink_v1_<member>
// shims that its function table points at.
func checkExports(t *testing.T, name string, f *elf.File, header string) {
	t.Helper()
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^\w+ \**(picomq_\w+)\(`).FindAllStringSubmatch(header, -1) {
		want = append(want, m[1])
	}
	table := regexp.MustCompile(`(?s)typedef struct picomq_sink_api \{(.*?)\} picomq_sink_api;`).FindStringSubmatch(header)
	if table == nil {
		t.Fatal("no picomq_sink_api in the header")
	}
	for _, m := range regexp.MustCompile(`\(\*(\w+)\)\(`).FindAllStringSubmatch(table[1], -1) {
		want = append(want, "picomq_sink_v1_"+m[1])
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var got []string
	for _, s := range syms {
		if elf.ST_BIND(s.Info) == elf.STB_GLOBAL && elf.ST_TYPE(s.Info) == elf.STT_FUNC &&
			s.Section != elf.SHN_UNDEF && strings.HasPrefix(s.Name, "picomq_") {
			got = append(got, s.Name)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) < 6 || !slices.Equal(got, want) {
		t.Errorf("%s exports %v, want %v", name, got, want)
	}
}

// checkBuildInfo checks a Go artifact's build info, and that the manifest and
// the SBOM list exactly the modules compiled in, at go.mod's versions.
func checkBuildInfo(t *testing.T, name string, files map[string][]byte, arch, main string, buildList map[string]string, manifest string) {
	t.Helper()
	bi, err := buildinfo.Read(bytes.NewReader(files[name]))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if bi.GoVersion != runtime.Version() || bi.Path != main || bi.Main.Path != modulePath {
		t.Errorf("%s: built by %s from %s (%s), want %s, %s", name, bi.GoVersion, bi.Path, bi.Main.Path, runtime.Version(), main)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["-trimpath"] != "true" || settings["GOOS"] != "linux" || settings["GOARCH"] != arch {
		t.Errorf("%s: build settings %v", name, settings)
	}
	for k := range settings {
		if strings.HasPrefix(k, "vcs") || strings.HasPrefix(k, "CGO_") && k != "CGO_ENABLED" {
			t.Errorf("%s: build setting %s=%s depends on the checkout", name, k, settings[k])
		}
	}
	deps := map[string]string{}
	for _, d := range bi.Deps {
		deps[d.Path] = d.Version
		if d.Replace != nil || d.Version != buildList[d.Path] {
			t.Errorf("%s: module %s %s (replace %v), go.mod's build list has %q", name, d.Path, d.Version, d.Replace, buildList[d.Path])
		}
		if !strings.Contains(manifest, "\tdep\t"+d.Path+"\t"+d.Version+"\t") {
			t.Errorf("MANIFEST.txt does not list %s %s for %s", d.Path, d.Version, name)
		}
	}
	if len(deps) == 0 && name != "picomq-connect" {
		t.Errorf("%s: no modules in the build info", name)
	}

	var bom struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
		Metadata    struct {
			Component struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"component"`
			Properties []struct{ Name, Value string } `json:"properties"`
		} `json:"metadata"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"components"`
	}
	sbomName := "sbom/" + strings.TrimSuffix(name, ".so") + ".cdx.json"
	if err := json.Unmarshal(files[sbomName], &bom); err != nil {
		t.Fatalf("%s: %v", sbomName, err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" ||
		bom.Metadata.Component.Name != modulePath || bom.Metadata.Component.Version != "v"+version {
		t.Errorf("%s: format %q %q, component %q %q", sbomName, bom.BOMFormat, bom.SpecVersion, bom.Metadata.Component.Name, bom.Metadata.Component.Version)
	}
	props := map[string]string{}
	for _, p := range bom.Metadata.Properties {
		props[p.Name] = p.Value
	}
	if props["cdx:gomod:binary:hash:SHA-256"] != sha256Hex(files[name]) {
		t.Errorf("%s describes another file: SHA-256 %s", sbomName, props["cdx:gomod:binary:hash:SHA-256"])
	}
	listed := map[string]string{}
	for _, c := range bom.Components {
		if c.Name != "std" {
			listed[c.Name] = c.Version
		} else if c.Version != runtime.Version() {
			t.Errorf("%s: std %s, want %s", sbomName, c.Version, runtime.Version())
		}
	}
	if fmt.Sprint(listed) != fmt.Sprint(deps) {
		t.Errorf("%s lists\n%v\nthe build info has\n%v", sbomName, listed, deps)
	}
}

// glibcFloor is the newest GLIBC_x.y version any library or picomq-host
// needs, read from their ELF version references.
func glibcFloor(t *testing.T, files map[string][]byte, arch string) string {
	t.Helper()
	var floor []int
	for _, name := range []string{"libpicomq_connector_delta_sink.so", "libpicomq_connector_redshift_sink.so", "picomq-host"} {
		f, err := elf.NewFile(bytes.NewReader(files[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		syms, err := f.ImportedSymbols()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, s := range syms {
			v, ok := strings.CutPrefix(s.Version, "GLIBC_")
			if !ok {
				continue
			}
			var parts []int
			for _, p := range strings.Split(v, ".") {
				n, err := strconv.Atoi(p)
				if err != nil {
					t.Fatalf("%s: symbol version %s", name, s.Version)
				}
				parts = append(parts, n)
			}
			if slices.Compare(parts, floor) > 0 {
				floor = parts
			}
		}
	}
	if floor == nil {
		t.Fatalf("linux/%s: no GLIBC_ symbol versions", arch)
	}
	s := fmt.Sprint(floor)
	s = strings.ReplaceAll(s[1:len(s)-1], " ", ".")
	t.Logf("linux/%s needs glibc >= %s", arch, s)
	return s
}

// run extracts the release and runs it: picomq-connect --check on the
// example definitions, describe() of both plugins in the released host, and a
// Delta commit read back by delta-rs. A foreign arch runs under qemu-user when
// it is installed.
func run(t *testing.T, files map[string][]byte, arch string) {
	t.Helper()
	var wrapper []string
	if arch != runtime.GOARCH {
		qemu := map[string]string{"arm64": "qemu-aarch64-static", "amd64": "qemu-x86_64-static"}[arch]
		sysroot := map[string]string{"arm64": "/usr/aarch64-linux-gnu", "amd64": "/usr/x86_64-linux-gnu"}[arch]
		if _, err := exec.LookPath(qemu); err != nil {
			t.Logf("linux/%s not run: no %s (apt-get install qemu-user-static)", arch, qemu)
			return
		}
		wrapper = []string{qemu, "-L", sysroot}
	}
	dir := t.TempDir()
	for name, b := range files {
		mode := os.FileMode(0o644)
		if goArtifacts[name] != "" || name == "picomq-host" {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, mode); err != nil {
			t.Fatal(err)
		}
	}

	// --check loads each library in picomq-host to read its describe():
	// under qemu, the host needs the wrapper too.
	host := filepath.Join(dir, "picomq-host")
	if wrapper != nil {
		script := "#!/bin/sh\nexec " + strings.Join(wrapper, " ") + " " + host + " \"$@\"\n"
		host = filepath.Join(t.TempDir(), "picomq-host-wrapped")
		if err := os.WriteFile(host, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	check := exec.Command(filepath.Join(dir, "picomq-connect"), "--check", "--plugin-dir", dir, "--host", host,
		filepath.Join(repoRoot(t), "examples", "definitions"))
	if wrapper != nil {
		check = exec.Command(wrapper[0], append(append(wrapper[1:], check.Path), check.Args[1:]...)...)
	}
	if out, err := check.CombinedOutput(); err != nil || !strings.Contains(string(out), "2 definition(s) OK, 2 enabled") {
		t.Errorf("picomq-connect --check: %v\n%s", err, out)
	}

	h := hosttest.StartTest(t, filepath.Join(dir, "picomq-host"), hosttest.Wrapper(wrapper...))
	libs := map[string]*hostclient.Lib{}
	for _, name := range []string{"delta", "redshift"} {
		lib, err := h.Load(filepath.Join(dir, "libpicomq_connector_"+name+"_sink.so"))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := lib.Describe()
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Version   string `json:"version"`
			GoVersion string `json:"go_version"`
		}
		if err := json.Unmarshal([]byte(doc), &d); err != nil || d.Version != version || d.GoVersion != runtime.Version() {
			t.Errorf("%s describe(): %v %s", name, err, doc)
		}
		libs[name] = lib
	}

	table := filepath.Join(t.TempDir(), "orders")
	pyenv.Run(t, `
import sys, pyarrow as pa
from deltalake import write_deltalake
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=pa.schema([("id", pa.int64()), ("customer", pa.string())])))
`, table)
	def, _ := json.Marshal(map[string]any{"key": "orders_delta", "name": "orders", "version": 0,
		"plugin_config": map[string]any{"table_uri": "file://" + table}})
	inst, err := libs["delta"].Open(string(def))
	if err != nil {
		t.Fatal(err)
	}
	batch := hostclient.Batch{Attempt: 1, Topic: "orders.eu", Schema: "json", Records: []hostclient.Record{
		{Offset: 0, TimestampMs: 1767225600000, Payload: []byte(`{"id":1,"customer":"ann"}`)},
		{Offset: 1, TimestampMs: 1767225600001, Payload: []byte(`{"id":2,"customer":"bob"}`)},
	}}
	if err := inst.Consume(batch); err != nil {
		t.Fatal(err)
	}
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	got := pyenv.Run(t, `
import sys, json
from deltalake import DeltaTable
rows = sorted(DeltaTable(sys.argv[1]).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
print(json.dumps(rows))
`, table)
	if want := `[{"id": 1, "customer": "ann"}, {"id": 2, "customer": "bob"}]`; strings.TrimSpace(got) != want {
		t.Errorf("delta-rs reads %s, want %s", got, want)
	}
}

// diffTarballs names the entries that differ between two tarballs.
func diffTarballs(t *testing.T, a, b []byte) string {
	entries := func(data []byte) map[string]string {
		m := map[string]string{}
		gz, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return map[string]string{"(not gzip)": err.Error()}
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err != nil {
				return m
			}
			body, _ := io.ReadAll(tr)
			m[h.Name] = fmt.Sprintf("mode %o uid %d mtime %d sha256 %s", h.Mode, h.Uid, h.ModTime.Unix(), sha256Hex(body))
		}
	}
	ea, eb := entries(a), entries(b)
	var diffs []string
	for name, va := range ea {
		if eb[name] != va {
			diffs = append(diffs, fmt.Sprintf("%s: %s | %s", name, va, eb[name]))
		}
	}
	for name := range eb {
		if _, ok := ea[name]; !ok {
			diffs = append(diffs, name+": only in the second")
		}
	}
	if len(diffs) == 0 {
		return "same entries, different tar or gzip framing"
	}
	slices.Sort(diffs)
	return "\n  " + strings.Join(diffs, "\n  ")
}

// modules is go.mod's build list: module path → version.
func modules(t *testing.T, src string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(run1(t, src, "go", "list", "-m", "-f", "{{.Path}} {{.Version}}", "all"), "\n") {
		if path, v, ok := strings.Cut(line, " "); ok {
			m[path] = v
		}
	}
	return m
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return run1(t, dir, "git", args...)
}

func run1(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
