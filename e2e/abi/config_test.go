package abi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// A host sets overrides with setenv(3) after it started, before or after it
// loaded the plugin, and removes them with unsetenv; open must see the
// environment as it is then. The Go runtime of a c-shared library copies
// the environment when the library is loaded, so only what was set before
// the dlopen would reach os.Getenv.
func TestEnvOverridesAreReadAtOpen(t *testing.T) {
	const prefix = "PICOMQ_CONNECTORS_SINK_LIVE_ENV_PLUGIN_CONFIG_"
	const token = "tok-set-before-dlopen-77"
	dir := t.TempDir()
	rec1, rec2 := filepath.Join(dir, "rec1.jsonl"), filepath.Join(dir, "rec2.jsonl")
	h := startHost(t, hostclient.Env(prefix+"FAIL_MODE=fatal"))
	// Before dlopen: seen even by a copy taken at load.
	if err := h.Setenv(prefix+"TOKEN", token); err != nil {
		t.Fatal(err)
	}
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	// After dlopen: only a plugin reading the live environment sees these.
	for _, kv := range [][2]string{{prefix + "RECORD_PATH", rec1}, {prefix + "VERBOSE", "true"}} {
		if err := h.Setenv(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Unsetenv(prefix + "FAIL_MODE"); err != nil {
		t.Fatal(err)
	}
	def := definition(t, "live-env", map[string]any{"record_path": "/nonexistent/dir/x"})
	b := hostclient.Batch{Attempt: 1, Topic: "t", Schema: "json", Records: []hostclient.Record{{Offset: 1, Payload: []byte(`1`)}}}
	inst, err := lib.Open(def)
	if err != nil {
		t.Fatalf("open with record_path set by setenv after dlopen: %v", err)
	}
	if err := inst.Consume(b); err != nil {
		t.Fatalf("consume with fail_mode unset after dlopen: %v", err)
	}
	logs := ""
	for _, l := range inst.Logs() {
		logs += l.Message + "\n"
	}
	for _, want := range []string{"token=[REDACTED]", "batch recorded topic=t"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q (an override set by setenv was not applied):\n%s", want, logs)
		}
	}
	if strings.Contains(logs, token) {
		t.Errorf("logs leak the token:\n%s", logs)
	}
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}

	// Each open reads the environment afresh.
	if err := h.Setenv(prefix+"RECORD_PATH", rec2); err != nil {
		t.Fatal(err)
	}
	inst, err = lib.Open(def)
	if err != nil {
		t.Fatal(err)
	}
	b.Records[0].Offset = 2
	if err := inst.Consume(b); err != nil {
		t.Fatal(err)
	}
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	for path, offset := range map[string]uint64{rec1: 1, rec2: 2} {
		if got := readRecorded(t, path); len(got) != 1 || got[0].Records[0].Offset != offset {
			t.Errorf("%s: %+v, want the batch of offset %d", filepath.Base(path), got, offset)
		}
	}
}

// A plugin_config key or an override for this sink that the plugin does not
// declare is refused, naming the nearest key: a typo must not leave the
// default silently in force. Another sink's overrides are none of its
// business.
func TestUnknownKeysAreRefused(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	h := startHost(t, hostclient.Env(
		"PICOMQ_CONNECTORS_SINK_OTHER_PLUGIN_CONFIG_NOT_A_KEY=1",
		"PICOMQ_CONNECTORS_SINK_TYPO_ENV_PLUGIN_CONFIG_FAIL_MDOE=retry",
	))
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = lib.Open(definition(t, "typo", map[string]any{"record_path": rec, "fail_mdoe": "fatal"}))
	wantStatus(t, err, hostclient.StatusBadConfig, `plugin_config key "fail_mdoe" is not known to this plugin; did you mean "fail_mode"?`)
	_, err = lib.Open(definition(t, "typo", map[string]any{"record_path": rec, "compression": "zstd"}))
	wantStatus(t, err, hostclient.StatusBadConfig, `plugin_config key "compression" is not known to this plugin; known keys: record_path, token, fail_mode`)
	_, err = lib.Open(definition(t, "typo_env", map[string]any{"record_path": rec}))
	wantStatus(t, err, hostclient.StatusBadConfig,
		"environment override PICOMQ_CONNECTORS_SINK_TYPO_ENV_PLUGIN_CONFIG_FAIL_MDOE names no plugin_config key of this plugin; "+
			`did you mean PICOMQ_CONNECTORS_SINK_TYPO_ENV_PLUGIN_CONFIG_FAIL_MODE (key "fail_mode")?`)
	// OTHER's variable does not concern sink "fine".
	inst, err := lib.Open(definition(t, "fine", map[string]any{"record_path": rec}))
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rec); err != nil {
		t.Fatal(err)
	}
}
