package delta_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// An override the host sets with setenv(3) after it loaded the library is
// read at open: the sink writes to the table the environment names, not to
// the file's.
func TestEnvOverrideSetAfterLoadIsRead(t *testing.T) {
	dir := t.TempDir()
	fromFile, fromEnv := fileURI(filepath.Join(dir, "from_file")), fileURI(filepath.Join(dir, "from_env"))
	py(t, createEvents, fromFile)
	py(t, createEvents, fromEnv)
	h := newHarness(t)
	if err := h.host.Setenv("PICOMQ_CONNECTORS_SINK_EVENTS_DELTA_PLUGIN_CONFIG_TABLE_URI", fromEnv); err != nil {
		t.Fatal(err)
	}
	inst := h.open("events_delta", map[string]any{"table_uri": fromFile})
	consume(t, inst, events("t", 0, 3))
	wantIDs(t, fromEnv, "0,1,2")
	wantIDs(t, fromFile, "")
}

// The spec's way to keep the S3 secret out of the file, with the secret
// injected by setenv after the library was loaded: the wrong secret in the
// file fails open, the right one from the environment works.
func TestS3SecretSetAfterLoadIsRead(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	cfg := minio(t, svc)
	uri := "s3://" + bucket + "/events"
	py(t, createEvents, uri)
	cfg = with(cfg, "table_uri", uri, "aws_s3_secret_key", "wrong-secret-in-file")
	h := newHarness(t)
	err := h.openErr("events_delta", cfg)
	wantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table", "the store refused the configured key")
	const name = "PICOMQ_CONNECTORS_SINK_EVENTS_DELTA_PLUGIN_CONFIG_AWS_S3_SECRET_KEY"
	if err := h.host.Setenv(name, svc.S3SecretKey); err != nil {
		t.Fatal(err)
	}
	inst := h.open("events_delta", cfg)
	consume(t, inst, events("t", 0, 2))
	wantIDs(t, uri, "0,1")
	for _, l := range inst.Logs() {
		if strings.Contains(l.Message, svc.S3SecretKey) {
			t.Fatalf("secret in logs: %s", l.Message)
		}
	}
}

// A misspelt key is refused at open, naming the key meant, rather than
// leaving its default in force: exactly_onse = false would otherwise keep
// exactly-once on.
func TestUnknownKeyIsRefused(t *testing.T) {
	h := newHarness(t)
	uri := fileURI(filepath.Join(t.TempDir(), "t"))
	py(t, createEvents, uri)
	err := h.openErr("typo", map[string]any{"table_uri": uri, "exactly_onse": false})
	wantStatus(t, err, hostclient.StatusBadConfig, `plugin_config key "exactly_onse" is not known to this plugin; did you mean "exactly_once"?`)
	h2 := newHarness(t, hostclient.Env("PICOMQ_CONNECTORS_SINK_TYPO_PLUGIN_CONFIG_EXACTLY_ONSE=false"))
	err = h2.openErr("typo", map[string]any{"table_uri": uri})
	wantStatus(t, err, hostclient.StatusBadConfig, "environment override PICOMQ_CONNECTORS_SINK_TYPO_PLUGIN_CONFIG_EXACTLY_ONSE names no plugin_config key",
		`did you mean PICOMQ_CONNECTORS_SINK_TYPO_PLUGIN_CONFIG_EXACTLY_ONCE (key "exactly_once")?`)
}

// The AWS SDK's default chain reads AWS_ACCESS_KEY_ID through the Go
// environment, which a c-shared library copied once at load: keys a host
// sets after loading the library must reach it at the next open too.
func TestS3DefaultChainSeesKeysSetAfterLoad(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	cfg := minio(t, svc)
	delete(cfg, "aws_s3_access_key")
	delete(cfg, "aws_s3_secret_key")
	uri := "s3://" + bucket + "/events"
	py(t, createEvents, uri)
	cfg = with(cfg, "table_uri", uri)
	h := newHarness(t, hostclient.Env("AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"))
	if _, err := h.lib.Open(definition("events_delta", cfg)); err == nil {
		t.Fatal("open succeeded without credentials")
	}
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": svc.S3AccessKey, "AWS_SECRET_ACCESS_KEY": svc.S3SecretKey} {
		if err := h.host.Setenv(k, v); err != nil {
			t.Fatal(err)
		}
	}
	inst := h.open("events_delta", cfg)
	consume(t, inst, events("t", 0, 2))
	wantIDs(t, uri, "0,1")
}
