package redshift_test

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

func definition(t testing.TB, key string, cfg map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"key": key, "name": "Orders to Redshift", "version": 0, "plugin_config": cfg})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func baseConfig(dsn string) map[string]any {
	return map[string]any{
		"connection_string": dsn,
		"target_table":      "orders_{topic_segment[-1]}",
		"aws_iam_role":      "arn:aws:iam::123456789012:role/RedshiftCopy",
		"s3_bucket":         "picomq-staging",
		"s3_prefix":         "redshift/orders",
		"aws_region":        "eu-west-1",
	}
}

func TestOpenFailsToConnectWithoutLeakingThePassword(t *testing.T) {
	logs := &sdktest.Logs{}
	cfg := baseConfig("postgres://loader:hunter2-secret@" + closedPort(t) + "/analytics?sslmode=disable&connect_timeout=5")
	cfg["payload_format"] = "json"
	cfg["s3_prefix"] = "" // required, but may be empty
	cfg["retry_delay"] = "whenever"
	_, err := sdk.Open(definition(t, "no_db", cfg), logs.Log)
	if err == nil || !strings.HasPrefix(err.Error(), "Failed to connect to Redshift: ") {
		t.Fatalf("got %v", err)
	}
	if sdk.StatusOf(err) != sdk.StatusRetry {
		t.Fatalf("status %v, want RETRY (the endpoint may come back)", sdk.StatusOf(err))
	}
	all := logs.String()
	if strings.Contains(err.Error()+all, "hunter2-secret") {
		t.Fatalf("password leaked: %v\n%s", err, all)
	}
	if !strings.Contains(all, "WARN Json is not supported, falling back to Text") {
		t.Fatalf("json warning missing:\n%s", all)
	}
	if strings.Contains(all, "retry_delay") {
		t.Fatalf("an unparsable retry_delay falls back silently:\n%s", all)
	}
}

func TestOpenWarnsAboutUnknownPayloadFormat(t *testing.T) {
	logs := &sdktest.Logs{}
	cfg := baseConfig("postgres://loader:pw-value@" + closedPort(t) + "/analytics?sslmode=disable")
	cfg["payload_format"] = "parquet"
	_, err := sdk.Open(definition(t, "unknown_format", cfg), logs.Log)
	if err == nil {
		t.Fatal("open succeeded without a database")
	}
	if !strings.Contains(logs.String(), `WARN payload_format "parquet" is not supported, falling back to Varbyte`) {
		t.Fatalf("warning missing:\n%s", logs.String())
	}
}

func TestDescribeFlagsSecrets(t *testing.T) {
	raw, err := sdk.Describe()
	if err != nil {
		t.Fatal(err)
	}
	var d sdk.Description
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "redshift_sink" {
		t.Fatalf("name %q", d.Name)
	}
	secret := map[string]bool{}
	defaults := map[string]string{}
	for _, f := range d.Config {
		secret[f.Key] = f.Secret
		if f.Default != nil {
			defaults[f.Key] = *f.Default
		}
	}
	for _, k := range []string{"connection_string", "aws_access_key_id", "aws_secret_access_key"} {
		if !secret[k] {
			t.Errorf("%s is not flagged secret", k)
		}
	}
	want := map[string]string{"batch_size": "100", "max_connections": "5", "include_metadata": "true", "include_key": "true",
		"payload_format": "varbyte", "max_retries": "3", "retry_delay": "1s", "statement_timeout": "10m", "archive": "false", "verbose_logging": "false",
		"auth": "password", "iam_duration": "15m"}
	for k, v := range want {
		if defaults[k] != v {
			t.Errorf("default of %s is %q, want %q", k, defaults[k], v)
		}
	}
	// The spec's 18, statement_timeout (the bound on the staging lock wait)
	// and the six of IAM authentication.
	if len(d.Config) != 25 {
		t.Errorf("%d keys, want the spec's 18, statement_timeout and auth with its five iam_ keys", len(d.Config))
	}
}
