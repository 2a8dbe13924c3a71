package delta

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/changes"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Config is the Delta sink's plugin_config, declared once: the same tags
// drive decoding, env overrides, describe() and docs/delta-config.md.
type Config struct {
	TableURI           string `config:"table_uri,required,template,destination" doc:"Table location as a URL: file:///path, s3://bucket/path, az://container/path or gs://bucket/path. Supports {topic} and {topic_segment[n]}"`
	StorageBackendType string `config:"storage_backend_type" doc:"s3, azure or gcs. Enables the matching group of keys. When absent no storage options are passed and the URI has to work on its own, as file:// paths do"`
	ExactlyOnce        bool   `config:"exactly_once" default:"true" doc:"Record the last offset of every commit in a Delta txn action and skip records at or below it on replay. false appends replays again"`
	SkipEmptyPayloads  bool   `config:"skip_empty_payloads" default:"false" doc:"Skip records with an empty payload (tombstones on compacted topics), counted in empty_payloads_skipped. false fails the batch naming the record's offset, as for any payload that is not a JSON object"`
	SchemaEvolution    string `config:"schema_evolution" default:"none" doc:"none: top-level fields the table lacks are ignored, counted in fields_ignored and each new name logged once. add_columns: such a field becomes a new nullable column, typed from the batch's values (integer long, other number double, string, boolean, object struct, array array) and added by the commit that holds the batch; a field the batch gives two types, or none but an empty array or object, fails the batch; one that is only null waits for a batch that types it. Existing columns never change type, not even on tables with the typeWidening feature: a value that does not fit its column is a record error. See docs/delta.md, Schema evolution"`
	MetadataColumns    bool   `config:"metadata_columns" default:"false" doc:"Fill the table's top-level pico_* columns, those it has, from each record's metadata instead of its payload: pico_topic (string), pico_partition (integer or long), pico_offset (long), pico_timestamp (long epoch milliseconds, or timestamp), pico_key (binary as sent, or string base64; null without a key), pico_headers (map<string,string>, values base64 when not UTF-8). Another type fails the first batch naming the column. With create_table the pico_* columns are added to the created schema (after table_schema's columns, unless table_schema lists them itself). false: no metadata is written, as the spec says"`
	DerivedColumns     string `config:"derived_columns" doc:"Fill columns from a timestamp in another top-level field, e.g. \"day = date(ts), hour = hour(ts)\" (UTC). Functions: date (date or string column), year, month, day, hour (integer or zero-padded string column). The source: a timestamp, timestamp_ntz, date or string column, or a field the table lacks, read as a timestamp column would read it; null or missing gives null. Typically partition columns. See docs/delta.md"`

	CreateTable              bool          `config:"create_table" default:"false" doc:"Create a table that does not exist yet: the first batch for its URI commits version 0 with table_schema, partition_by and the batch's records in one commit. A table that exists is written as it is, whatever table_schema says. With a templated table_uri, one table per resolved URI. false: a missing table is an error"`
	TableSchema              string        `config:"table_schema" doc:"Required with create_table, refused without it. The schema of the tables the sink creates, in Delta's own JSON form (the schemaString of a metaData action: a struct type whose fields have a name and a type; nullable defaults to true). Columns metadata_columns adds need not be listed. See docs/delta.md, Creating tables"`
	FileSync                 string        `config:"file_sync" default:"file" doc:"file:// tables: how a batch's data files become durable before its commit names them. file: each data file and each directory that gained one is fsynced (a batch over 5 partitions makes 12 syncs, the commit's 2 included). filesystem: they are left to one syncfs(2) of the table's filesystem before the commit, 2 syncs per batch; it also writes out other programs' unsynced data on that filesystem, so use it where the tables have a filesystem to themselves. ext4, XFS and Btrfs (elsewhere it fsyncs file by file). After a failed syncfs every commit of the table fails until the sink is opened again. Needs Linux 5.8 or later (refused at open before, whatever the table). Object stores ignore it. See docs/delta.md, Durability"`
	Compaction               bool          `config:"compaction" default:"false" doc:"Compact small data files in the background: per table, a partition value that no writer appended to for compaction_idle and that has at least compaction_min_files files under half of compaction_target_file_size gets them rewritten into files of about that size, committed as remove and add actions with dataChange = false (rows unchanged; streaming readers skip the commit). Batches never wait for it and never fail because of it. Removed files stay for readers of older versions until a VACUUM. false: every file stays as its batch wrote it. See docs/delta.md, Compaction"`
	CompactionTargetFileSize int64         `config:"compaction_target_file_size" default:"67108864" doc:"With compaction: the size in bytes compaction packs small files up to (by their total size; the rewritten file is about as large). At least 1048576. Default 64 MiB: a compacted file is built in memory before its upload, one at a time per instance"`
	CompactionMinFiles       int           `config:"compaction_min_files" default:"10" doc:"With compaction: the fewest small files (under half of compaction_target_file_size) a partition value must have before it is compacted. At least 2"`
	CompactionIdle           time.Duration `config:"compaction_idle" default:"10m" doc:"With compaction: how long no file may have been added to a partition value (the newest add's modificationTime, whoever wrote it) before it is compacted, so that partitions still being written, such as the current hour, are left alone. The table is checked every quarter of it (between 1s and 1m). 0 compacts whatever qualifies at every check"`
	ColumnTypes              string        `config:"column_types" default:"values" doc:"Where the types of the columns the sink makes come from. values: from the records' JSON values (create_table takes table_schema; add_columns types a new field from the batch's values). value_schema: from the value schema a host passes with a batch it decoded from Avro or Protobuf (ABI 1.3; picomq-connect does): create_table without table_schema creates the table from the first batch's value schema (every column nullable; a batch without one fails FATAL), and add_columns types a new field from it, from the values only for a field it does not describe. table_schema, when given, still wins. See docs/delta.md, Column types from the value schema"`
	PartitionBy              string        `config:"partition_by" doc:"With create_table: the partition columns of the tables the sink creates, comma-separated, e.g. region, day. Each names a top-level column of table_schema (or a pico_* column metadata_columns adds) of a primitive type. Default: not partitioned"`
	WriteMode                string        `config:"write_mode" default:"append" doc:"append: every record is a new row (the spec's behaviour). upsert: each record is a change of the row its key_columns name — an upsert (insert or replace) or a delete, read as change_format says; each commit removes the changed keys' old rows (the files that hold them are rewritten without them, copy-on-write) and adds their new rows, with the txn action in the same commit, so a replay applies nothing twice. Within a commit the last change of a key wins. A record that is no change (a null or missing key, an unknown op) is a record error (dead letter, or FATAL with errors_tolerance = none). Needs exactly_once = true and key_columns. See docs/delta.md, Upserts and deletes"`
	KeyColumns               string        `config:"key_columns" doc:"Required with write_mode = upsert, refused without it. The columns that identify a row, comma-separated, e.g. id or tenant, order_id. Each must be a top-level column of a primitive type (checked when the table is opened or created); a key column may be a partition column. Keys are compared in the column's type, after the record's value is coerced to it as any value is"`
	ChangeFormat             string        `config:"change_format" default:"op_field" doc:"With write_mode = upsert: how a record says what it changes. op_field: the record is the row plus a member op_field names (c, r, i, u in any case upsert; d deletes); that member is not written. debezium: a Debezium change event, bare or in the JSON converter's schema/payload envelope (op c, r, u upsert after; d deletes the key of before, or of the record key). In both an empty payload (a tombstone) deletes the key the record key (a JSON object with the key columns) names"`
	OpField                  string        `config:"op_field" default:"_op" doc:"With change_format = op_field: the member of each record that names its change"`
	GroupLinger              time.Duration `config:"group_commit_linger" default:"0s" doc:"Beyond the spec, 0 unless set: the time between the starts of this instance's commits to one table, on average (each wait is drawn between half and one and a half of it, so that writers do not fall into step). A commit due sooner waits, and the batches that arrive meanwhile join it (up to group_commit_max_bytes). For several writers of one table (several picomq-connect processes, max_in_flight and max_in_flight_per_partition above 1): each commit then holds more batches, the table gets fewer versions, and fewer commits lose a race to another writer. Every batch may wait up to one and a half of it more. 0 to 10s. See docs/delta.md, Group commits"`
	GroupMaxBytes            int           `config:"group_commit_max_bytes" default:"67108864" doc:"When a runtime delivers several batches for one table at once (concurrent consume calls, picomq-connect's max_in_flight), they are written as one commit while the payload bytes of its batches stay within this; the first batch goes in whatever its size. A commit writes one data file per partition value, so this is the byte target of a grouped commit's data files (in JSON payload bytes; the Parquet file is usually several times smaller). No effect when batches come one at a time. See docs/delta.md, Group commits"`

	AWSAccessKey   string `config:"aws_s3_access_key,secret" doc:"S3 access key. Set both keys or neither; neither uses the standard AWS credential chain"`
	AWSSecretKey   string `config:"aws_s3_secret_key,secret" doc:"S3 secret key"`
	AWSRegion      string `config:"aws_s3_region" doc:"Required with s3"`
	AWSEndpointURL string `config:"aws_s3_endpoint_url" doc:"Custom endpoint for MinIO and other S3-compatible stores. Turns on path-style addressing"`
	AWSAllowHTTP   bool   `config:"aws_s3_allow_http" doc:"Allow a plain http:// endpoint. Set for local MinIO"`

	AzureAccountName   string `config:"azure_storage_account_name" doc:"Required with azure"`
	AzureContainerName string `config:"azure_container_name" doc:"Required with azure"`
	AzureAccountKey    string `config:"azure_storage_account_key,secret" doc:"One of this, azure_storage_sas_token or azure_use_default_credential with azure"`
	AzureSASToken      string `config:"azure_storage_sas_token,secret" doc:"See azure_storage_account_key"`
	AzureDefaultCred   bool   `config:"azure_use_default_credential" default:"false" doc:"Authenticate without a key, through the Azure SDK (azidentity), trying in order: a service principal secret in the environment (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET), workload identity (AZURE_FEDERATED_TOKEN_FILE), managed identity. Takes neither key nor SAS token, and an https endpoint only. A first token is fetched at open. See Credentials in docs/delta.md"`
	AzureEndpointURL   string `config:"azure_storage_endpoint_url" doc:"Blob service URL when not https://<account>.blob.core.windows.net, e.g. http://127.0.0.1:10000/devstoreaccount1 for Azurite (path-style, the account in the path)"`

	GCSServiceAccountKey string `config:"gcs_service_account_key,secret" doc:"Required with gcs unless gcs_use_default_credentials is true. The service account JSON as a string"`
	GCSDefaultCreds      bool   `config:"gcs_use_default_credentials" default:"false" doc:"Authenticate with Google's Application Default Credentials instead of a key: the file GOOGLE_APPLICATION_CREDENTIALS names, gcloud's application_default_credentials.json, then the metadata server. Takes no gcs_service_account_key. A first token is fetched at open. See Credentials in docs/delta.md"`
	GCSEndpointURL       string `config:"gcs_endpoint_url" doc:"Custom GCS endpoint, e.g. http://127.0.0.1:4443 for fake-gcs-server. A plain http:// endpoint is taken for an emulator: requests carry no credentials"`
}

// Config key names the sink's messages use (the struct tags above are the
// declaration; TestConfigKeyNames checks that these match them).
const (
	keyTableURI           = "table_uri"
	keyStorageBackendType = "storage_backend_type"
	keySchemaEvolution    = "schema_evolution"
	keyCreateTable        = "create_table"
	keyTableSchema        = "table_schema"
	keyPartitionBy        = "partition_by"
	keyColumnTypes        = "column_types"
	keyMetadataColumns    = "metadata_columns"
	keyDerivedColumns     = "derived_columns"
	keyFileSync           = "file_sync"
	keyGroupMaxBytes      = "group_commit_max_bytes"
	keyGroupLinger        = "group_commit_linger"
	keyWriteMode          = "write_mode"
	keyKeyColumns         = "key_columns"
	keyChangeFormat       = "change_format"
	keyOpField            = "op_field"
	keyExactlyOnce        = "exactly_once"

	keyCompactionTargetFileSize = "compaction_target_file_size"
	keyCompactionMinFiles       = "compaction_min_files"
	keyCompactionIdle           = "compaction_idle"
)

// compactOptions returns the compaction settings, validated; nil when
// compaction is off.
func (c *Config) compactOptions() (*compactOptions, error) {
	if !c.Compaction {
		return nil, nil
	}
	switch {
	case c.CompactionTargetFileSize < 1<<20:
		return nil, sdk.BadConfigf("plugin_config key %q: %d is below 1048576 (1 MiB)", keyCompactionTargetFileSize, c.CompactionTargetFileSize)
	case c.CompactionMinFiles < 2:
		return nil, sdk.BadConfigf("plugin_config key %q: %d is below 2", keyCompactionMinFiles, c.CompactionMinFiles)
	case c.CompactionIdle < 0:
		return nil, sdk.BadConfigf("plugin_config key %q: %s is negative", keyCompactionIdle, c.CompactionIdle)
	}
	return &compactOptions{target: c.CompactionTargetFileSize, minFiles: c.CompactionMinFiles, idle: c.CompactionIdle}, nil
}

// write_mode values.
const (
	writeAppend = "append"
	writeUpsert = "upsert"
)

// changeConfig returns how to read change records with write_mode =
// upsert, validated; nil with append (the upsert-only keys refused).
func (c *Config) changeConfig() (*changes.Config, error) {
	switch c.WriteMode {
	case "", writeAppend:
		if c.KeyColumns != "" {
			return nil, sdk.BadConfigf("plugin_config key %q is for %s = %q only", keyKeyColumns, keyWriteMode, writeUpsert)
		}
		return nil, nil
	case writeUpsert:
	default:
		return nil, sdk.BadConfigf("plugin_config key %q: %q is not one of %s, %s", keyWriteMode, c.WriteMode, writeAppend, writeUpsert)
	}
	if !c.ExactlyOnce {
		return nil, sdk.BadConfigf("plugin_config key %q = %q needs %q = true: without the txn action a replay would apply old changes over newer ones",
			keyWriteMode, writeUpsert, keyExactlyOnce)
	}
	if strings.TrimSpace(c.KeyColumns) == "" {
		return nil, sdk.BadConfigf("plugin_config key %q is required with %s = %q", keyKeyColumns, keyWriteMode, writeUpsert)
	}
	cols, err := changes.ParseKeyColumns(c.KeyColumns)
	if err != nil {
		return nil, sdk.BadConfigf("plugin_config key %q: %v", keyKeyColumns, err)
	}
	format, err := changes.ParseFormat(c.ChangeFormat)
	if err != nil {
		return nil, sdk.BadConfigf("plugin_config key %q: %v", keyChangeFormat, err)
	}
	op := c.OpField
	if op == "" {
		op = changes.DefaultOpField
	}
	if format == changes.OpField && slices.Contains(cols, op) {
		return nil, sdk.BadConfigf("plugin_config key %q: %q is also a key column", keyOpField, op)
	}
	return &changes.Config{Format: format, OpField: op, KeyColumns: cols}, nil
}

// file_sync values.
const (
	fileSyncFile       = "file"
	fileSyncFilesystem = "filesystem"
)

// schema_evolution values.
const (
	evolveNone       = "none"
	evolveAddColumns = "add_columns"
)

// checkSchemaEvolution validates schema_evolution.
func (c *Config) checkSchemaEvolution() error {
	switch c.SchemaEvolution {
	case "", evolveNone, evolveAddColumns:
		return nil
	}
	return sdk.BadConfigf("plugin_config key %q: %q is not one of %s, %s", keySchemaEvolution, c.SchemaEvolution, evolveNone, evolveAddColumns)
}

// storageKeys names each storage option by its config key: objstore reports
// which option is wrong, the sink says it in its users' words.
var storageKeys = map[objstore.Option]string{
	objstore.OptBackend:                keyStorageBackendType,
	objstore.OptLocalSyncFilesystem:    keyFileSync,
	objstore.OptS3AccessKey:            "aws_s3_access_key",
	objstore.OptS3SecretKey:            "aws_s3_secret_key",
	objstore.OptS3Region:               "aws_s3_region",
	objstore.OptS3Endpoint:             "aws_s3_endpoint_url",
	objstore.OptS3AllowHTTP:            "aws_s3_allow_http",
	objstore.OptAzureAccount:           "azure_storage_account_name",
	objstore.OptAzureContainer:         "azure_container_name",
	objstore.OptAzureAccountKey:        "azure_storage_account_key",
	objstore.OptAzureSASToken:          "azure_storage_sas_token",
	objstore.OptAzureEndpoint:          "azure_storage_endpoint_url",
	objstore.OptGCSServiceAccountKey:   "gcs_service_account_key",
	objstore.OptGCSEndpoint:            "gcs_endpoint_url",
	objstore.OptAzureDefaultCredential: "azure_use_default_credential",
	objstore.OptGCSDefaultCredentials:  "gcs_use_default_credentials",
}

func storageKey(o objstore.Option) string { return storageKeys[o] }

// storageOptions returns the backend options storage_backend_type selects,
// validated, with the spec's messages ("Invalid storage configuration: S3
// backend requires 'aws_s3_region'").
func (c *Config) storageOptions() (objstore.Options, error) {
	var opts objstore.Options
	switch c.FileSync {
	case "", fileSyncFile:
	case fileSyncFilesystem:
		opts.Local.SyncFilesystem = true
	default:
		return opts, sdk.BadConfigf("plugin_config key %q: %q is not one of %s, %s", keyFileSync, c.FileSync, fileSyncFile, fileSyncFilesystem)
	}
	switch c.StorageBackendType {
	case "":
	case "s3":
		opts.Backend = objstore.BackendS3
		opts.S3 = objstore.S3Options{
			AccessKey: c.AWSAccessKey, SecretKey: c.AWSSecretKey, Region: c.AWSRegion,
			Endpoint: c.AWSEndpointURL, AllowHTTP: c.AWSAllowHTTP,
		}
	case "azure":
		// The table URI's container must be azure_container_name
		// (objstore.Open refuses a mismatch with "Invalid table URI").
		opts.Backend = objstore.BackendAzure
		opts.Azure = objstore.AzureOptions{
			Account: c.AzureAccountName, Container: c.AzureContainerName,
			AccountKey: c.AzureAccountKey, SASToken: c.AzureSASToken, DefaultCredential: c.AzureDefaultCred,
			Endpoint: c.AzureEndpointURL,
		}
	case "gcs":
		opts.Backend = objstore.BackendGCS
		opts.GCS = objstore.GCSOptions{ServiceAccountKey: c.GCSServiceAccountKey, DefaultCredentials: c.GCSDefaultCreds, Endpoint: c.GCSEndpointURL}
	default:
		return opts, sdk.BadConfigf("Invalid storage configuration: %s %q is not one of s3, azure, gcs", keyStorageBackendType, c.StorageBackendType)
	}
	if err := opts.Validate(); err != nil {
		return opts, sdk.BadConfig(&keyedError{"Invalid storage configuration: " + renderOptionErrors(err), err})
	}
	return opts, nil
}

// openAgain ends the message of a RETRY at open that the environment may
// heal without a configuration change.
const openAgain = "the runtime opens the sink again later"

// authenticate finds the default credentials the storage options opt into
// and fetches a first token, so that a missing credential fails open()
// for templated table URIs too: BAD_CONFIG when the credential found is
// refused or its file is not credentials, RETRY when the environment has
// none yet (a starting pod's identity) or a token endpoint did not answer.
func authenticate(ctx context.Context, opts *objstore.Options) error {
	err := opts.Authenticate(ctx)
	var ce *objstore.CredentialError
	if !errors.As(err, &ce) {
		return err
	}
	if ce.Transient {
		return sdk.Retry(&keyedError{"Storage authentication failed: " + ce.Render(storageKey) + "; " + openAgain, err})
	}
	return sdk.BadConfig(&keyedError{"Invalid storage configuration: " + ce.Render(storageKey), err})
}

// renderOptionErrors renders objstore's option errors with config key
// names, one a line as errors.Join would.
func renderOptionErrors(err error) string {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var lines []string
		for _, e := range joined.Unwrap() {
			lines = append(lines, renderOptionErrors(e))
		}
		return strings.Join(lines, "\n")
	}
	var oe *objstore.OptionError
	if errors.As(err, &oe) {
		return oe.Render(storageKey)
	}
	return err.Error()
}

// uriError renders a *objstore.URIError with config key names, or returns
// nil when err has none.
func uriError(err error) error {
	var ue *objstore.URIError
	if !errors.As(err, &ue) {
		return nil
	}
	return &keyedError{ue.Render(storageKey), err}
}

// keyedError is an objstore error as the sink's users read it: with config
// key names. It unwraps to the typed error.
type keyedError struct {
	msg string
	err error
}

func (e *keyedError) Error() string { return e.msg }
func (e *keyedError) Unwrap() error { return e.err }
