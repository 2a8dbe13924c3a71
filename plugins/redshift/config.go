package redshift

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/changes"
	"github.com/picomq/heavy-sinks/shared/s3client"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/template"
)

// Config is the Redshift sink's plugin_config, declared once: the same tags
// drive decoding, environment overrides, describe() and
// docs/redshift-config.md (regenerate with
// `go test ./plugins/redshift -run TestConfigDocs -update`).
type Config struct {
	ConnectionString string `config:"connection_string,required,secret" doc:"A libpq URL to the cluster or workgroup endpoint, e.g. postgres://loader:pass@cluster:5439/analytics. TLS through sslmode and sslrootcert, in production ?sslmode=verify-full&sslrootcert=/etc/picomq/amazon-trust-ca-bundle.crt (see TLS in redshift.md); without sslmode, TLS is tried and not verified (prefer). The schema through ?options=-c%20search_path%3Danalytics. Redacted in the API"`
	TargetTable      string `config:"target_table,required,template,destination" doc:"Table name. Supports {topic} and {topic_segment[n]}. Quoted verbatim: a dot coming from the topic is part of the name; a dot written here is taken as a schema, which the sink does not support"`
	AWSIAMRole       string `config:"aws_iam_role,required" doc:"ARN Redshift assumes for COPY. Must be attached to the cluster"`
	S3Bucket         string `config:"s3_bucket,required" doc:"Bucket for the Parquet files"`
	// S3Prefix is a pointer so that the key is required yet may be empty.
	S3Prefix           *string `config:"s3_prefix,required" doc:"Key prefix inside the bucket. May be empty. Each file is named by a version 7 UUID directly under the prefix; archived files move to archive/messages/ under the prefix"`
	AWSRegion          string  `config:"aws_region,required" doc:"Region of the bucket. With s3_endpoint, any label"`
	S3Endpoint         string  `config:"s3_endpoint" doc:"Custom S3 endpoint, e.g. http://minio:9000. Turns on path-style addressing"`
	AWSAccessKeyID     string  `config:"aws_access_key_id,secret" doc:"Static S3 credential for the runtime side. Set both keys or neither; neither uses the default AWS credential chain. Redacted in the API"`
	AWSSecretAccessKey string  `config:"aws_secret_access_key,secret" doc:"Static S3 credential. Redacted in the API"`
	BatchSize          int     `config:"batch_size" default:"100" doc:"Rows per Parquet file, and per COPY of a batch loaded alone (a group load of batches delivered at once COPYs all their files together, see Group loads in redshift.md). Must be above 0. Each COPY has a large fixed cost on Redshift: size it with the topic's batch_length, so a batch takes few COPYs (docs/redshift.md, Sizing batch_size); below 100, open() logs a warning"`
	MaxConnections     int     `config:"max_connections" default:"5" doc:"Pool size. Must be above 0"`
	IncludeMetadata    bool    `config:"include_metadata" default:"true" doc:"Add pico_offset, pico_timestamp, pico_topic and pico_partition"`
	IncludeKey         bool    `config:"include_key" default:"true" doc:"Add pico_key, the record key in base64, NULL when the record has none"`
	PayloadFormat      string  `config:"payload_format" default:"varbyte" doc:"Column type for payload: varbyte (VARBYTE(16777216), the bytes), text (VARCHAR(MAX), 65535 bytes of UTF-8) or super (SUPER, each payload parsed by Redshift's JSON_PARSE: it must be one JSON value Redshift accepts, see SUPER payloads in redshift.md). json is accepted and treated as text; anything else logs a warning and uses varbyte"`
	MaxRetries         int     `config:"max_retries" default:"3" doc:"Attempts per load transaction (COPY, INSERT, staging cleanup) on transient errors. Values below 1 mean one attempt"`
	// RetryDelay is a string, not a time.Duration, because the spec wants
	// an unparsable value to fall back to 1s instead of failing open().
	RetryDelay string `config:"retry_delay" default:"1s" doc:"Base delay between attempts, a Go duration such as 500ms, multiplied by the attempt number. An unparsable value falls back to 1s"`
	// StatementTimeout exists because Redshift has no lock_timeout: a
	// writer that stalls inside its load transaction would otherwise keep
	// every other writer of the table waiting on LOCK forever.
	StatementTimeout time.Duration `config:"statement_timeout" default:"10m" doc:"Longest one statement may take, waiting for the staging table's lock (held by another writer's load) and WLM queueing included, before Redshift cancels it; the batch then fails RETRY naming the table. Sets Redshift's statement_timeout on every connection of the pool. Keep it well above the time a COPY and INSERT of batch_size rows into the largest target take (the load transaction is sent as one query, which Redshift may time as a whole); 0 leaves the user's or cluster's own setting (Redshift's default: no limit)"`
	// IAM authentication (auth = "iam"): docs/redshift.md, IAM authentication.
	Auth                 string        `config:"auth" default:"password" doc:"How the sink logs in: password (the user and password of connection_string) or iam (temporary credentials from AWS for each new connection, through the default AWS credential chain: redshift:GetClusterCredentials with iam_db_user, else redshift:GetClusterCredentialsWithIAM, or redshift-serverless:GetCredentials with iam_workgroup_name). With iam, connection_string must carry no password and its user is replaced by the issued one"`
	IAMClusterIdentifier string        `config:"iam_cluster_identifier" doc:"With auth = iam: the provisioned cluster's identifier. Set this or iam_workgroup_name"`
	IAMWorkgroupName     string        `config:"iam_workgroup_name" doc:"With auth = iam: the Redshift Serverless workgroup's name. Set this or iam_cluster_identifier"`
	IAMDbUser            string        `config:"iam_db_user" doc:"With auth = iam and a cluster: an existing database user to get credentials for (GetClusterCredentials, AutoCreate off). Empty: GetClusterCredentialsWithIAM, which logs in as IAM:<name> of the AWS identity"`
	IAMRegion            string        `config:"iam_region" doc:"With auth = iam: the cluster's or workgroup's region. Default: the region in connection_string's host when it is an AWS Redshift endpoint, else aws_region"`
	IAMDuration          time.Duration `config:"iam_duration" default:"15m" doc:"With auth = iam: how long each set of temporary credentials lasts, 15m to 1h in whole seconds (DurationSeconds). New credentials are fetched when a fifth of that (at most 5 minutes) is left; open connections are not affected by expiry"`
	// Upserts and deletes by key (docs/redshift.md, Upserts and deletes).
	WriteMode      string `config:"write_mode" default:"append" doc:"append: every record is a new row, deduplicated by id (the spec's behaviour). upsert: each record is a change of the row its key_columns name — an upsert (insert or replace) or a delete, read as change_format says; each load deletes the target's rows of the changed keys and inserts the last upsert of each, and records the highest offset applied per topic-partition in offsets_<table> in the same transaction, so a replay applies nothing twice. Within a load the last change of a key (by offset) wins. payload holds the row (op_field: the record without its op member; debezium: after). A record that is no change (a null or missing key, an unknown op) is a record error (dead letter, or FATAL with errors_tolerance = none). Needs key_columns. See docs/redshift.md, Upserts and deletes"`
	KeyColumns     string `config:"key_columns" doc:"Required with write_mode = upsert, refused without it. The fields of the row that identify it, comma-separated, e.g. id or tenant, order_id: plain identifiers (letters, digits, _). Each is read from the record and stored in the VARCHAR column key_<field> (lower case; e.g. key_id) of the target and staging tables, which the sink adds when it creates them; an existing table must have them (checked when the table is first used). A string key is stored as its text, an integer as its decimal digits, a boolean as true or false"`
	ChangeFormat   string `config:"change_format" default:"op_field" doc:"With write_mode = upsert: how a record says what it changes. op_field: the record is the row plus a member op_field names (c, r, i, u in any case upsert; d deletes); that member is not written. debezium: a Debezium change event, bare or in the JSON converter's schema/payload envelope (op c, r, u upsert after; d deletes the key of before, or of the record key). In both an empty payload (a tombstone) deletes the key the record key (a JSON object with the key columns) names"`
	OpField        string `config:"op_field" default:"_op" doc:"With change_format = op_field: the member of each record that names its change"`
	Archive        bool   `config:"archive" default:"false" doc:"Keep each Parquet file under archive/messages/ inside s3_prefix instead of deleting it"`
	VerboseLogging bool   `config:"verbose_logging" default:"false" doc:"Log every batch at info instead of debug"`
}

// Messages the spec names.
const (
	msgStaticKeys = "Choosing to use aws_access_key_id and aws_secret_access_key then both MUST be provided"
	msgJSON       = "Json is not supported, falling back to Text"
)

// Config key names the sink's own messages use (the struct tags above are
// the declaration; TestConfigKeyNames checks these against them).
const (
	keyConnectionString = "connection_string"
	keyTargetTable      = "target_table"
	keyIAMRole          = "aws_iam_role"
	keyS3Bucket         = "s3_bucket"
	keyS3Prefix         = "s3_prefix"
	keyS3Endpoint       = "s3_endpoint"
	keyBatchSize        = "batch_size"
	keyMaxConnections   = "max_connections"
	keyMaxRetries       = "max_retries"
	keyPayloadFormat    = "payload_format"
	keyStatementTimeout = "statement_timeout"
	keyAuth             = "auth"
	keyIAMCluster       = "iam_cluster_identifier"
	keyIAMWorkgroup     = "iam_workgroup_name"
	keyIAMDbUser        = "iam_db_user"
	keyIAMRegion        = "iam_region"
	keyIAMDuration      = "iam_duration"
	keyWriteMode        = "write_mode"
	keyKeyColumns       = "key_columns"
	keyChangeFormat     = "change_format"
	keyOpField          = "op_field"
)

// write_mode values.
const (
	writeAppend = "append"
	writeUpsert = "upsert"
)

// defaultRetryDelay is what an unparsable retry_delay becomes.
const defaultRetryDelay = time.Second

// The sink cannot see the runtime's batch_length, the records per batch it
// is handed; it judges batch_size against the runtime's default. Every
// chunk is one COPY, which has a large fixed cost on a real cluster, so a
// batch_size that cuts a default batch into more COPYs than the default
// batch_size does (10) is worth a warning at open.
const (
	runtimeBatchLength = 1000 // the runtime's default batch_length
	manyCopies         = 10   // COPYs per default batch with the default batch_size
)

// copiesPerBatch is how many COPYs a runtime batch of n records costs.
func copiesPerBatch(n, batchSize int) int { return (n + batchSize - 1) / batchSize }

// parsed holds only what validate derives from a Config by parsing,
// clamping or building: the sink reads every other setting from the Config
// itself, so no field is copied and kept in sync by hand.
type parsed struct {
	table      *template.Template
	layout     *rsql.Layout
	prefix     string        // s3_prefix without leading or trailing slashes
	attempts   int           // max_retries, at least 1
	retryDelay time.Duration // retry_delay, or its fallback
	iam        bool          // auth = iam
	// changes, with write_mode = upsert, reads each record as a change;
	// nil in append mode.
	changes *changes.Config
}

// validate checks c without any I/O and returns what it parsed and the
// warnings to log. Every error is BAD_CONFIG and names its key.
func (c *Config) validate() (*parsed, []string, error) {
	var warnings []string
	p := &parsed{attempts: c.MaxRetries}
	if s3client.CheckKeys(c.AWSAccessKeyID, c.AWSSecretAccessKey) != nil {
		return nil, nil, sdk.BadConfigf("%s", msgStaticKeys)
	}
	if err := c.validateAuth(p); err != nil {
		return nil, nil, err
	}
	if c.BatchSize <= 0 {
		return nil, nil, sdk.BadConfigf("%s must be above 0, got %d", keyBatchSize, c.BatchSize)
	}
	if n := copiesPerBatch(runtimeBatchLength, c.BatchSize); n > manyCopies {
		warnings = append(warnings, fmt.Sprintf("%s = %d loads a batch of %d records (the runtime's default batch_length) with %d COPYs, each with a large fixed cost on Redshift: set %s near the topic's batch_length (docs/redshift.md, Sizing batch_size)",
			keyBatchSize, c.BatchSize, runtimeBatchLength, n, keyBatchSize))
	}
	if c.MaxConnections <= 0 {
		return nil, nil, sdk.BadConfigf("%s must be above 0, got %d", keyMaxConnections, c.MaxConnections)
	}
	if p.attempts < 1 {
		warnings = append(warnings, fmt.Sprintf("%s = %d, making one attempt per load", keyMaxRetries, c.MaxRetries))
		p.attempts = 1
	}

	var format rsql.PayloadFormat
	switch strings.ToLower(strings.TrimSpace(c.PayloadFormat)) {
	case "varbyte":
		format = rsql.PayloadVarbyte
	case "text":
		format = rsql.PayloadText
	case "super":
		format = rsql.PayloadSuper
	case "json":
		format = rsql.PayloadText
		warnings = append(warnings, msgJSON)
	default:
		format = rsql.PayloadVarbyte
		warnings = append(warnings, fmt.Sprintf("%s %q is not supported, falling back to Varbyte", keyPayloadFormat, c.PayloadFormat))
	}
	ch, keyCols, err := c.changeConfig()
	if err != nil {
		return nil, nil, err
	}
	p.changes = ch
	p.layout = rsql.NewLayout(rsql.Options{IncludeMetadata: c.IncludeMetadata, IncludeKey: c.IncludeKey, Payload: format, KeyColumns: keyCols})

	// Redshift takes statement_timeout in whole milliseconds, up to what
	// fits an int32; refuse what it would round or reject.
	if d := c.StatementTimeout; d < 0 || d%time.Millisecond != 0 || d.Milliseconds() > math.MaxInt32 {
		return nil, nil, sdk.BadConfigf("%s must be 0 (no limit) or a whole number of milliseconds up to %d, got %s",
			keyStatementTimeout, math.MaxInt32, d)
	}

	p.retryDelay = defaultRetryDelay
	if d, err := time.ParseDuration(strings.TrimSpace(c.RetryDelay)); err == nil && d >= 0 {
		p.retryDelay = d
	}

	tmpl, err := template.Parse(c.TargetTable)
	if err != nil {
		return nil, nil, sdk.BadConfigf("%s: %v", keyTargetTable, err)
	}
	p.table = tmpl
	if tmpl.IsStatic() {
		if err := rsql.CheckTableName(c.TargetTable); err != nil {
			return nil, nil, sdk.BadConfigf("%s: %v", keyTargetTable, err)
		}
	}

	if err := rsql.CheckLiteral(c.AWSIAMRole); err != nil {
		return nil, nil, sdk.BadConfigf("%s %s", keyIAMRole, err)
	}
	if err := rsql.CheckLiteral(c.S3Bucket); err != nil {
		return nil, nil, sdk.BadConfigf("%s %s", keyS3Bucket, err)
	}
	if strings.ContainsAny(c.S3Bucket, "/ ") {
		return nil, nil, sdk.BadConfigf("%s %q is not a bucket name: it contains a slash or a space (put key prefixes in %s)", keyS3Bucket, c.S3Bucket, keyS3Prefix)
	}
	if c.S3Prefix != nil {
		p.prefix = strings.Trim(*c.S3Prefix, "/")
	}
	if err := rsql.CheckLiteral(p.prefix); err != nil {
		return nil, nil, sdk.BadConfigf("%s %s", keyS3Prefix, err)
	}
	if err := c.s3Options().Validate(); err != nil {
		// The keys passed above, so this is the endpoint.
		return nil, nil, sdk.BadConfigf("%s %q is not an http(s) URL", keyS3Endpoint, c.S3Endpoint)
	}
	return p, warnings, nil
}

// changeConfig reads write_mode and its keys: nil in append mode, else how
// to read change records and the key columns' names in the tables (lower
// case, as Redshift folds them).
func (c *Config) changeConfig() (*changes.Config, []string, error) {
	switch strings.TrimSpace(c.WriteMode) {
	case "", writeAppend:
		if strings.TrimSpace(c.KeyColumns) != "" {
			return nil, nil, sdk.BadConfigf("plugin_config key %q is for %s = %q only", keyKeyColumns, keyWriteMode, writeUpsert)
		}
		return nil, nil, nil
	case writeUpsert:
	default:
		return nil, nil, sdk.BadConfigf("plugin_config key %q: %q is not one of %s, %s", keyWriteMode, c.WriteMode, writeAppend, writeUpsert)
	}
	if strings.TrimSpace(c.KeyColumns) == "" {
		return nil, nil, sdk.BadConfigf("plugin_config key %q is required with %s = %q", keyKeyColumns, keyWriteMode, writeUpsert)
	}
	cols, err := changes.ParseKeyColumns(c.KeyColumns)
	if err != nil {
		return nil, nil, sdk.BadConfigf("plugin_config key %q: %v", keyKeyColumns, err)
	}
	names, err := rsql.KeyColumnNames(cols)
	if err != nil {
		return nil, nil, sdk.BadConfigf("plugin_config key %q: %v", keyKeyColumns, err)
	}
	format, err := changes.ParseFormat(strings.TrimSpace(c.ChangeFormat))
	if err != nil {
		return nil, nil, sdk.BadConfigf("plugin_config key %q: %v", keyChangeFormat, err)
	}
	op := c.OpField
	if op == "" {
		op = changes.DefaultOpField
	}
	if format == changes.OpField && slices.Contains(cols, op) {
		return nil, nil, sdk.BadConfigf("plugin_config key %q: %q is also a key column", keyOpField, op)
	}
	return &changes.Config{Format: format, OpField: op, KeyColumns: cols}, names, nil
}

// s3Options are the S3 client settings. A plain http:// s3_endpoint is
// allowed (the spec's example is http://minio:9000, with no switch for it),
// and no S3 call is retried: a failed upload fails the batch and the
// runtime redelivers it, as the spec requires.
func (c *Config) s3Options() s3client.Options {
	return s3client.Options{
		Region: c.AWSRegion, AccessKey: c.AWSAccessKeyID, SecretKey: c.AWSSecretAccessKey,
		Endpoint: c.S3Endpoint, AllowHTTP: true, Retries: s3client.NoRetries,
	}
}

// schemaQualified reports whether target_table itself (not a topic it is
// resolved against) contains a dot. Placeholders never contain one, so any
// dot in the template text is one the operator wrote, almost surely meaning
// schema.table.
func schemaQualified(t *template.Template) bool {
	return strings.Contains(t.String(), ".")
}
