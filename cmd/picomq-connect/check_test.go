package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/logbuf"
)

// runCheck runs picomq-connect --check on paths with the real host and the
// libraries in dist/, and returns the exit code and what it wrote to stderr.
func runCheck(t *testing.T, paths ...string) (int, string) {
	t.Helper()
	a := append([]string{"--check", "--plugin-dir", distDir(t), "--host", hosttest.BuildHost(t)}, paths...)
	lb := &logbuf.Buffer{}
	stderr = lb
	code := run(a)
	stderr = os.Stderr
	out := lb.String()
	t.Logf("exit %d, stderr:\n%s", code, out)
	return code, out
}

// writeCheckDef writes a definition of sink key for the library path with the
// given [plugin_config] lines and returns its file.
func writeCheckDef(t *testing.T, dir, key, path, pluginConfig string) string {
	t.Helper()
	file := filepath.Join(dir, key+".toml")
	def := fmt.Sprintf("type = \"sink\"\nkey = %q\npath = %q\n\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n\n[plugin_config]\n%s\n",
		key, path, pluginConfig)
	if err := os.WriteFile(file, []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

const testLib = "test/libpicomq_connector_test_a_sink"

func wantLines(t *testing.T, stderr string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(stderr, l) {
			t.Errorf("stderr lacks %q", l)
		}
	}
}

// --check refuses what open would: every plugin_config problem of every
// definition, each naming the file, the sink key and the key, with the
// SDK's suggestion for a misspelt key; never a secret's value.
func TestCheckRefusesWhatOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	typo := writeCheckDef(t, dir, "typo", testLib, fmt.Sprintf("record_path = %q\nfail_mdoe = \"retry\"\ncompression = \"zstd\"", rec))
	typed := writeCheckDef(t, dir, "typed", testLib, fmt.Sprintf("record_path = %q\nmax_batch = \"ten\"\ntoken = 4242424242", rec))
	code, stderr := runCheck(t, dir)
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	wantLines(t, stderr,
		typo+`: sink "typo": plugin_config key "fail_mdoe" is not known to this plugin; did you mean "fail_mode"?`,
		typo+`: sink "typo": plugin_config key "compression" is not known to this plugin; known keys: record_path, token`,
		typed+`: sink "typed": plugin_config key "max_batch": expected int, got string`,
		typed+`: sink "typed": plugin_config key "token": expected string, got number`,
	)
	if strings.Contains(stderr, "4242424242") {
		t.Error("stderr shows the value of the secret key token")
	}
	if strings.Contains(stderr, "definition(s) OK") {
		t.Error("a failed check says OK")
	}
}

// A required key may come from the environment override the plugin reads
// at open; an override of the wrong type is refused like a value in the
// file. Real Redshift library.
func TestCheckRequiredKeyAndEnvOverrides(t *testing.T) {
	testenv.Library(t, "libpicomq_connector_redshift_sink.so")
	dir := t.TempDir()
	file := writeCheckDef(t, dir, "rs_check", "libpicomq_connector_redshift_sink", `connection_string = "postgres://u:hunter2-pw@127.0.0.1:1/db"
target_table = "orders_{topic_segment[-1]}"
s3_bucket = ""
s3_prefix = ""
aws_region = "us-east-1"`)
	code, stderr := runCheck(t, file)
	if code != exitUsage {
		t.Errorf("aws_iam_role missing, s3_bucket empty: exit %d, want %d", code, exitUsage)
	}
	wantLines(t, stderr,
		file+`: sink "rs_check": plugin_config key "aws_iam_role" is required`,
		file+`: sink "rs_check": plugin_config key "s3_bucket" is required`)
	if strings.Contains(stderr, `"s3_prefix" is required`) {
		t.Error(`s3_prefix = "" refused: the plugin declares it may be empty`)
	}

	const prefix = "PICOMQ_CONNECTORS_SINK_RS_CHECK_PLUGIN_CONFIG_"
	t.Setenv(prefix+"AWS_IAM_ROLE", "arn:aws:iam::123456789012:role/RedshiftCopy")
	t.Setenv(prefix+"S3_BUCKET", "staging")
	if code, _ := runCheck(t, file); code != exitOK {
		t.Errorf("aws_iam_role from the environment: exit %d, want 0", code)
	}

	t.Setenv(prefix+"BATCH_SIZE", "lots")
	t.Setenv(prefix+"MAX_CONECTIONS", "3")
	code, stderr = runCheck(t, file)
	if code != exitUsage {
		t.Errorf("bad overrides: exit %d, want %d", code, exitUsage)
	}
	wantLines(t, stderr,
		file+`: sink "rs_check": environment override `+prefix+`BATCH_SIZE for plugin_config key "batch_size": cannot parse "lots" as int`,
		file+`: sink "rs_check": environment override `+prefix+`MAX_CONECTIONS names no plugin_config key of this plugin; did you mean `+prefix+`MAX_CONNECTIONS (key "max_connections")?`,
	)
	if strings.Contains(stderr, "hunter2-pw") {
		t.Error("stderr shows the password of connection_string")
	}
}

// The example definitions pass --check, as written.
func TestCheckExamples(t *testing.T) {
	testenv.Library(t, "libpicomq_connector_delta_sink.so")
	testenv.Library(t, "libpicomq_connector_redshift_sink.so")
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	code, _ := runCheck(t, filepath.Join(root, "examples", "definitions"))
	if code != exitOK {
		t.Errorf("examples/definitions: exit %d, want 0", code)
	}
}

// --check loads each library but opens nothing: with the Redshift cluster
// and both S3 endpoints on a local listener, it finds the misspelt keys
// and no connection arrives.
func TestCheckConnectsNowhere(t *testing.T) {
	testenv.Library(t, "libpicomq_connector_delta_sink.so")
	testenv.Library(t, "libpicomq_connector_redshift_sink.so")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan string, 100) // the peers' addresses, in order
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	dir := t.TempDir()
	rs := writeCheckDef(t, dir, "rs", "libpicomq_connector_redshift_sink", fmt.Sprintf(`connection_string = "postgres://u:p@%s/db"
target_table = "t"
aws_iam_role = "arn:aws:iam::123456789012:role/R"
s3_bucket = "b"
s3_prefix = "p/"
aws_region = "us-east-1"
s3_endpoint = "http://%s"
aws_access_key_id = "AKIAEXAMPLE"
aws_secret_access_key = "secret-example"
batch_sise = 10`, addr, addr))
	delta := writeCheckDef(t, dir, "delta", "libpicomq_connector_delta_sink", fmt.Sprintf(`table_uri = "s3://lake/t"
storage_backend_type = "s3"
aws_s3_region = "us-east-1"
aws_s3_endpoint_url = "http://%s"
aws_s3_allow_http = true
aws_s3_access_key = "AKIAEXAMPLE"
aws_s3_secret_key = "secret-example"
exactly_onse = false`, addr))
	code, stderr := runCheck(t, dir)
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	wantLines(t, stderr,
		rs+`: sink "rs": plugin_config key "batch_sise" is not known to this plugin; did you mean "batch_size"?`,
		delta+`: sink "delta": plugin_config key "exactly_onse" is not known to this plugin; did you mean "exactly_once"?`,
	)
	// A connection of our own, accepted after any --check made: once it
	// arrives, every earlier one has been counted.
	last, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer last.Close()
	for {
		select {
		case peer := <-accepted:
			if peer != last.LocalAddr().String() {
				t.Errorf("--check connected to a sink's endpoint (from %s)", peer)
				continue
			}
		case <-time.After(10 * time.Second):
			t.Fatal("our own connection was never accepted")
		}
		break
	}
}

// A library that cannot be loaded fails the check, naming the
// definition's path.
func TestCheckLibraryThatDoesNotLoad(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libnot_a_plugin.so")
	if err := os.WriteFile(lib, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := writeCheckDef(t, dir, "broken", strings.TrimSuffix(lib, ".so"), "")
	code, stderr := runCheck(t, file)
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	wantLines(t, stderr, fmt.Sprintf("%s: path %q: loading %s", file, strings.TrimSuffix(lib, ".so"), lib))
}

// --check says, as the start does, which blocks ask for batches in flight
// from a plugin that runs its consume calls one at a time; not a problem
// (it is correct), so the check passes. A plugin declaring
// concurrent_consume gets no warning.
func TestCheckWarnsSerialisedInFlight(t *testing.T) {
	dir := t.TempDir()
	file := writeCheckDef(t, dir, "inflight", testLib, fmt.Sprintf("record_path = %q", filepath.Join(t.TempDir(), "rec.jsonl")))
	def, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	def = []byte(strings.Replace(string(def), "schema = \"json\"\n", "schema = \"json\"\nmax_in_flight = 4\n", 1))
	if err := os.WriteFile(file, def, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := runCheck(t, file)
	if code != exitOK || !strings.Contains(stderr, "event=max_in_flight_serialised") || !strings.Contains(stderr, "block=1 max_in_flight=4") {
		t.Errorf("exit %d, want 0 with a max_in_flight_serialised warning", code)
	}
	t.Setenv("PICOMQ_TEST_PLUGIN_CONCURRENT", "1") // the child reading describe() inherits it
	if code, stderr := runCheck(t, file); code != exitOK || strings.Contains(stderr, "max_in_flight_serialised") {
		t.Errorf("exit %d, or a warning for a plugin declaring concurrent_consume", code)
	}
}
