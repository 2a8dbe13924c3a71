package redshifttest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostdriver"
	"github.com/picomq/heavy-sinks/shared/testenv/sinkdriver"
)

// ConfigValidationMessages: every configuration message of the
// troubleshooting table is BAD_CONFIG from open(), before any connection is
// made: the connection string points at a closed port, so an open that
// connected first would fail RETRY "Failed to connect" instead. No secret
// of the configuration shows in a message or a log line. It needs no
// services (Offline).
func ConfigValidationMessages(t *testing.T, d sinkdriver.Driver, _ *Env) {
	const password, secretKey = "hunter2-secret", "s3cr3t-value"
	rt := d.Start(t, password, secretKey)
	dsn := "postgres://loader:" + password + "@" + closedPort(t) + "/analytics?sslmode=disable"
	for _, tc := range []struct {
		change map[string]any
		want   string
	}{
		{map[string]any{"connection_string": nil}, `plugin_config key "connection_string" is required`},
		{map[string]any{"target_table": nil}, `plugin_config key "target_table" is required`},
		{map[string]any{"aws_iam_role": nil}, `plugin_config key "aws_iam_role" is required`},
		{map[string]any{"s3_bucket": nil}, `plugin_config key "s3_bucket" is required`},
		{map[string]any{"s3_prefix": nil}, `plugin_config key "s3_prefix" is required`},
		{map[string]any{"aws_region": nil}, `plugin_config key "aws_region" is required`},
		{map[string]any{"aws_access_key_id": "AKIAEXAMPLE"}, "Choosing to use aws_access_key_id and aws_secret_access_key then both MUST be provided"},
		{map[string]any{"aws_access_key_id": "", "aws_secret_access_key": secretKey}, "Choosing to use aws_access_key_id and aws_secret_access_key then both MUST be provided"},
		{map[string]any{"batch_size": 0}, "batch_size must be above 0, got 0"},
		{map[string]any{"batch_size": -5}, "batch_size must be above 0, got -5"},
		{map[string]any{"max_connections": 0}, "max_connections must be above 0, got 0"},
		{map[string]any{"s3_endpoint": "minio:9000"}, `s3_endpoint "minio:9000" is not an http(s) URL`},
		{map[string]any{"batch_size": "100"}, `plugin_config key "batch_size": expected int, got string`},
		{map[string]any{"archive": "yes"}, `plugin_config key "archive"`},
		{map[string]any{"target_table": "analytics.orders"}, "Table 'analytics.orders' was not found or has no visible columns"},
		{map[string]any{"connection_string": "postgres://loader:" + password + "@host:notaport/db"}, "connection_string: "},
	} {
		cfg := map[string]any{
			"connection_string": dsn,
			"target_table":      "orders_{topic_segment[-1]}",
			"aws_iam_role":      "arn:aws:iam::123456789012:role/RedshiftCopy",
			"s3_bucket":         "picomq-staging",
			"s3_prefix":         "redshift/orders",
			"aws_region":        "eu-west-1",
		}
		for k, v := range tc.change {
			if v == nil {
				delete(cfg, k)
			} else {
				cfg[k] = v
			}
		}
		inst, err := rt.Open(sinkdriver.Definition{Key: "validation", Name: ConnectorName, Config: cfg})
		if err == nil {
			_ = inst.Close()
			t.Errorf("%v: open succeeded", tc.change)
			continue
		}
		se := asStatus(t, err)
		if se.Code != hostdriver.StatusBadConfig || !strings.HasPrefix(se.Message, tc.want) {
			t.Errorf("%v: got %v, want BAD_CONFIG %s", tc.change, se, tc.want)
		}
		if strings.Contains(se.Message, password) || strings.Contains(se.Message, secretKey) {
			t.Errorf("%v: a secret leaked: %v", tc.change, se)
		}
	}
}

// EmptyPrefixIsTheBucketRoot: s3_prefix is required but may be empty: the
// files go to the bucket root (the test's own root on a real cluster).
func EmptyPrefixIsTheBucketRoot(t *testing.T, d sinkdriver.Driver, e *Env) {
	table := e.Table("root")
	inst := e.Start(d).Open("root", e.Config(map[string]any{"s3_prefix": "", "target_table": table, "archive": true}))
	consume(t, inst, Batch("orders", 0, 3))
	e.ExactlyOnce(table, "orders", 0, 2)
	if objs := e.Objects(""); len(objs) != 1 || !regexp.MustCompile(`^archive/messages/`+uuidV7+`\.parquet$`).MatchString(objs[0]) {
		t.Errorf("objects %v, want one archive/messages/<uuid>.parquet at the root", objs)
	}
}
