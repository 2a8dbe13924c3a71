package delta_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

const createStrict = `
schema = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("small", pa.int16()), ("created_at", pa.timestamp("us", tz="UTC")),
    ("n", pa.struct([("when", pa.timestamp("us", tz="UTC"))])),
])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`

// Each troubleshooting row of the spec that a batch can trigger, with the
// table left exactly as it was: no commit, no data file.
func TestBadBatchesFailWithTheSpecMessagesAndCommitNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "strict")
	uri := fileURI(dir)
	py(t, createStrict, uri)
	inst := newHarness(t).open("strict", map[string]any{"table_uri": uri})
	cases := []struct {
		name    string
		batch   hostclient.Batch
		status  hostclient.Status
		message []string
	}{
		{"unparsable timestamp", jsonBatch("t", 0, `{"id":1,"created_at":"2026-09-03T21:15:04Z"}`, `{"id":2,"created_at":"yesterday"}`),
			hostclient.StatusFatal, []string{`Invalid record value: field "created_at": cannot parse "yesterday" as a timestamp (topic "t", record 1, offset 1)`}},
		{"nested timestamp", jsonBatch("t", 0, `{"id":1,"n":{"when":"soon"}}`),
			hostclient.StatusFatal, []string{`Invalid record value: field "n.when": cannot parse "soon" as a timestamp`}},
		{"integer out of range", jsonBatch("t", 0, `{"id":1,"small":40000}`),
			hostclient.StatusFatal, []string{`Invalid record value: field "small": value 40000 out of range for short (topic "t", record 0, offset 0)`}},
		{"type mismatch", jsonBatch("t", 0, `{"id":"one"}`),
			hostclient.StatusFatal, []string{`Invalid record value: field "id": expected long, got JSON string (topic "t", record 0, offset 0)`}},
		{"missing non-nullable", jsonBatch("t", 0, `{"small":1}`),
			hostclient.StatusFatal, []string{`Invalid record value: field "id": missing non-nullable field (topic "t", record 0, offset 0)`}},
		{"null in non-nullable", jsonBatch("t", 0, `{"id":null}`),
			hostclient.StatusFatal, []string{`Invalid record value: field "id": null in non-nullable field (topic "t", record 0, offset 0)`}},
		{"not an object", jsonBatch("t", 0, `[1,2]`),
			hostclient.StatusFatal, []string{`Invalid JSON record: payload is a JSON array, not an object (topic "t", record 0, offset 0)`}},
		{"not json at all", jsonBatch("t", 0, `{"id":`),
			hostclient.StatusFatal, []string{`Invalid JSON record: field "id": unexpected end of input at byte 6 (topic "t", record 0, offset 0)`}},
		{"invalid payload type", hostclient.Batch{Attempt: 1, Topic: "t", Schema: "raw", Records: []hostclient.Record{{Offset: 0, Payload: []byte(`{"id":1}`)}}},
			hostclient.StatusFatal, []string{"Invalid payload type"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantStatus(t, inst.Consume(tc.batch), tc.status, tc.message...)
		})
	}
	// The table is untouched, and the sink still works.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "_delta_log" {
			t.Errorf("left behind %s", e.Name())
		}
	}
	if n := len(history(t, uri)); n != 1 {
		t.Fatalf("%d versions after failed batches", n)
	}
	consume(t, inst, jsonBatch("t", 0, `{"id":7,"small":-32768}`))
	if got := readRows(t, uri, "id"); len(got) != 1 || got[0]["small"] != -32768.0 {
		t.Fatalf("rows %v", got)
	}
}

func TestOpenValidation(t *testing.T) {
	h := newHarness(t)
	missingTable := fileURI(filepath.Join(t.TempDir(), "nothing"))
	cases := []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"bare path", map[string]any{"table_uri": "/data/delta/orders"}, "Invalid table URI"},
		{"no table", map[string]any{"table_uri": missingTable}, "Failed to load Delta table " + missingTable},
		{"s3 without access key", map[string]any{"table_uri": "s3://b/t", "storage_backend_type": "s3", "aws_s3_secret_key": "s", "aws_s3_region": "r"},
			"Invalid storage configuration: S3 backend requires 'aws_s3_access_key'"},
		{"s3 without secret key", map[string]any{"table_uri": "s3://b/t", "storage_backend_type": "s3", "aws_s3_access_key": "a", "aws_s3_region": "r"},
			"Invalid storage configuration: S3 backend requires 'aws_s3_secret_key'"},
		{"s3 without region", map[string]any{"table_uri": "s3://b/t", "storage_backend_type": "s3", "aws_s3_access_key": "a", "aws_s3_secret_key": "s"},
			"Invalid storage configuration: S3 backend requires 'aws_s3_region'"},
		{"azure both credentials", map[string]any{"table_uri": "az://c/t", "storage_backend_type": "azure", "azure_storage_account_name": "a",
			"azure_container_name": "c", "azure_storage_account_key": "k", "azure_storage_sas_token": "s"},
			"Azure backend requires exactly one of 'azure_storage_account_key' or 'azure_storage_sas_token'"},
		{"azure no credential", map[string]any{"table_uri": "az://c/t", "storage_backend_type": "azure", "azure_storage_account_name": "a", "azure_container_name": "c"},
			"Azure backend requires exactly one of 'azure_storage_account_key' or 'azure_storage_sas_token'"},
		{"azure no account", map[string]any{"table_uri": "az://c/t", "storage_backend_type": "azure"},
			"Invalid storage configuration: Azure backend requires 'azure_storage_account_name'"},
		{"gcs no key", map[string]any{"table_uri": "gs://b/t", "storage_backend_type": "gcs"},
			"Invalid storage configuration: GCS backend requires 'gcs_service_account_key'"},
		{"unknown backend", map[string]any{"table_uri": "s3://b/t", "storage_backend_type": "ftp"}, "storage_backend_type \"ftp\""},
		{"bad template", map[string]any{"table_uri": "file:///x/{topic"}, `plugin_config key "table_uri"`},
		{"http endpoint not allowed", map[string]any{"table_uri": "s3://b/t", "storage_backend_type": "s3", "aws_s3_access_key": "a",
			"aws_s3_secret_key": "s", "aws_s3_region": "r", "aws_s3_endpoint_url": "http://127.0.0.1:1"}, "aws_s3_allow_http"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := h.openErr("v", tc.cfg)
			wantStatus(t, err, hostclient.StatusBadConfig, tc.want)
			if strings.Contains(err.Error(), "\"s\"") {
				t.Fatalf("a secret leaked: %v", err)
			}
		})
	}
	// A templated URI defers every table check to the first batch; a bare
	// path resolved from it fails that batch.
	inst := h.open("tmpl", map[string]any{"table_uri": "/data/{topic}"})
	wantStatus(t, inst.Consume(events("orders", 0, 1)), hostclient.StatusFatal, "Invalid table URI")
}

const createColumnMapping = `
write_deltalake(uri, pa.Table.from_pylist([{"id": 1}]), storage_options=opts,
    configuration={"delta.columnMapping.mode": "name", "delta.minReaderVersion": "2", "delta.minWriterVersion": "5"})
`

func TestRefusedTableFeatureIsNamed(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "cm"))
	py(t, createColumnMapping, uri)
	err := newHarness(t).openErr("cm", map[string]any{"table_uri": uri})
	wantStatus(t, err, hostclient.StatusBadConfig, "cannot be written by this sink", `table feature "columnMapping"`)
}
