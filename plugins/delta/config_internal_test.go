package delta

import (
	"context"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Every key name a message uses is a declared config key.
func TestConfigKeyNames(t *testing.T) {
	schema, err := sdk.SchemaOf[Config]()
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, f := range schema.Fields {
		declared[f.Key] = true
	}
	for _, k := range []string{keyTableURI, keyStorageBackendType, keySchemaEvolution, keyCreateTable, keyTableSchema, keyPartitionBy, keyMetadataColumns, keyDerivedColumns} {
		if !declared[k] {
			t.Errorf("%q is not a config key", k)
		}
	}
	for o := objstore.OptBackend; o <= objstore.OptGCSEndpoint; o++ {
		if !declared[storageKey(o)] {
			t.Errorf("%v: %q is not a config key", o, storageKey(o))
		}
	}
}

// The storage messages are the spec's, naming config keys, whatever shape
// objstore's errors have.
func TestStorageMessages(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{StorageBackendType: "s3", AWSSecretKey: "s"}, "Invalid storage configuration: S3 backend requires 'aws_s3_access_key'"},
		{Config{StorageBackendType: "s3", AWSAccessKey: "a"}, "Invalid storage configuration: S3 backend requires 'aws_s3_secret_key'"},
		{Config{StorageBackendType: "s3"}, "Invalid storage configuration: S3 backend requires 'aws_s3_region'"},
		{Config{StorageBackendType: "s3", AWSRegion: "r", AWSEndpointURL: "minio:9000"},
			`Invalid storage configuration: aws_s3_endpoint_url "minio:9000" is not an http(s) URL`},
		{Config{StorageBackendType: "s3", AWSRegion: "r", AWSEndpointURL: "http://minio:9000"},
			`Invalid storage configuration: aws_s3_endpoint_url "http://minio:9000" is plain http: set aws_s3_allow_http = true to allow it`},
		{Config{StorageBackendType: "azure"}, "Invalid storage configuration: Azure backend requires 'azure_storage_account_name'"},
		{Config{StorageBackendType: "azure", AzureAccountName: "a"}, "Invalid storage configuration: Azure backend requires 'azure_container_name'"},
		{Config{StorageBackendType: "azure", AzureAccountName: "a", AzureContainerName: "c"},
			"Invalid storage configuration: Azure backend requires exactly one of 'azure_storage_account_key' or 'azure_storage_sas_token'"},
		{Config{StorageBackendType: "azure", AzureAccountName: "a", AzureContainerName: "c", AzureAccountKey: "!", AzureEndpointURL: "http://x/?sv=1"},
			"Invalid storage configuration: azure_storage_account_key is not a base64 account key\n" +
				"azure_storage_endpoint_url must not carry a query: put a SAS token in azure_storage_sas_token"},
		{Config{StorageBackendType: "gcs"}, "Invalid storage configuration: GCS backend requires 'gcs_service_account_key'"},
		{Config{StorageBackendType: "gcs", GCSServiceAccountKey: "{"},
			"Invalid storage configuration: gcs_service_account_key is not JSON: give the service account key file's content"},
		{Config{StorageBackendType: "gcs", GCSServiceAccountKey: `{"type":"service_account","client_email":"e","private_key":"k"}`, GCSEndpointURL: "ftp://x"},
			"Invalid storage configuration: gcs_endpoint_url is not an http(s) URL, e.g. http://127.0.0.1:4443 for fake-gcs-server"},
		{Config{StorageBackendType: "S3"}, `Invalid storage configuration: storage_backend_type "S3" is not one of s3, azure, gcs`},
	} {
		_, err := tc.cfg.storageOptions()
		if err == nil || err.Error() != tc.want || sdk.StatusOf(err) != sdk.StatusBadConfig {
			t.Errorf("%+v:\n got %v\nwant %s", tc.cfg, err, tc.want)
		}
	}
}

// URI errors name config keys too, and stay recognisable by type.
func TestURIMessages(t *testing.T) {
	opts := objstore.Options{Backend: objstore.BackendAzure, Azure: objstore.AzureOptions{Account: "acct", Container: "lake", AccountKey: "a2V5"}}
	for uri, want := range map[string]string{
		"/data/delta/orders": `Invalid table URI: "/data/delta/orders": a URL with a scheme is required, e.g. file:///data/delta/orders or s3://bucket/path`,
		"s3:///x":            `Invalid table URI: "s3:///x": no bucket`,
		"file://":            `Invalid table URI: file path "" is not absolute`,
		"az://other/t":       `Invalid table URI: "az://other/t": container "other" differs from azure_container_name "lake"`,
		"abfss://lake@x.dfs.core.windows.net/t": `Invalid table URI: "abfss://lake@x.dfs.core.windows.net/t": ` +
			`account "x" differs from azure_storage_account_name "acct"`,
		"gs://b/t": `Invalid table URI: "gs://b/t": gs:// tables need storage_backend_type = "gcs" and its keys`,
	} {
		var err error
		loc, perr := objstore.ParseLocation(uri)
		if perr == nil {
			_, perr = objstore.Open(context.Background(), loc, opts)
		}
		err = uriError(perr)
		if err == nil || err.Error() != want || !isURIError(err) {
			t.Errorf("%s:\n got %v\nwant %s", uri, err, want)
		}
	}
}

// write_mode and its keys: upsert needs key_columns and exactly_once;
// key_columns without upsert, unknown values and an op_field that is a
// key column are refused, as BAD_CONFIG naming the key.
func TestWriteModeConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string // "" for accepted
	}{
		{Config{ExactlyOnce: true}, ""},
		{Config{ExactlyOnce: true, WriteMode: "append"}, ""},
		{Config{ExactlyOnce: true, WriteMode: "upsert", KeyColumns: "id", ChangeFormat: "op_field"}, ""},
		{Config{ExactlyOnce: true, WriteMode: "upsert", KeyColumns: "a, b", ChangeFormat: "debezium"}, ""},
		{Config{ExactlyOnce: true, WriteMode: "merge"}, `"write_mode": "merge" is not one of append, upsert`},
		{Config{ExactlyOnce: true, KeyColumns: "id"}, `"key_columns" is for write_mode = "upsert" only`},
		{Config{ExactlyOnce: true, WriteMode: "upsert", ChangeFormat: "op_field"}, `"key_columns" is required with write_mode = "upsert"`},
		{Config{ExactlyOnce: false, WriteMode: "upsert", KeyColumns: "id", ChangeFormat: "op_field"}, `needs "exactly_once" = true`},
		{Config{ExactlyOnce: true, WriteMode: "upsert", KeyColumns: "id,,x", ChangeFormat: "op_field"}, `"key_columns"`},
		{Config{ExactlyOnce: true, WriteMode: "upsert", KeyColumns: "id", ChangeFormat: "maxwell"}, `"change_format"`},
		{Config{ExactlyOnce: true, WriteMode: "upsert", KeyColumns: "id, _op", ChangeFormat: "op_field"}, `"op_field": "_op" is also a key column`},
	} {
		_, err := tc.cfg.changeConfig()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || sdk.StatusOf(err) != sdk.StatusBadConfig):
			t.Errorf("%+v: %v, want BAD_CONFIG containing %q", tc.cfg, err, tc.want)
		}
	}
}
