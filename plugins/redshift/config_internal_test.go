package redshift

import (
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/s3client"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

func validConfig() Config {
	prefix := "redshift/orders"
	return Config{
		ConnectionString: "postgres://loader:pass@127.0.0.1:5439/analytics",
		TargetTable:      "orders_{topic_segment[-1]}",
		AWSIAMRole:       "arn:aws:iam::123456789012:role/RedshiftCopy",
		S3Bucket:         "picomq-staging",
		S3Prefix:         &prefix,
		AWSRegion:        "eu-west-1",
		BatchSize:        100,
		MaxConnections:   5,
		IncludeMetadata:  true,
		IncludeKey:       true,
		PayloadFormat:    "varbyte",
		MaxRetries:       3,
		RetryDelay:       "1s",
	}
}

func TestValidateMessages(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"only the access key", func(c *Config) { c.AWSAccessKeyID = "AKIA" },
			"Choosing to use aws_access_key_id and aws_secret_access_key then both MUST be provided"},
		{"only the secret key", func(c *Config) { c.AWSSecretAccessKey = "secret" },
			"Choosing to use aws_access_key_id and aws_secret_access_key then both MUST be provided"},
		{"batch_size 0", func(c *Config) { c.BatchSize = 0 }, "batch_size must be above 0, got 0"},
		{"batch_size negative", func(c *Config) { c.BatchSize = -5 }, "batch_size must be above 0, got -5"},
		{"max_connections 0", func(c *Config) { c.MaxConnections = 0 }, "max_connections must be above 0, got 0"},
		{"bad template", func(c *Config) { c.TargetTable = "orders_{nope}" }, `target_table: template "orders_{nope}": unknown placeholder "{nope}" at byte 7`},
		{"static name too long", func(c *Config) { c.TargetTable = strings.Repeat("x", 120) }, "target_table: table name"},
		{"role with backslash", func(c *Config) { c.AWSIAMRole = `arn:aws:iam::1:role/a\b` }, "aws_iam_role contains a backslash"},
		{"bucket with slash", func(c *Config) { c.S3Bucket = "bucket/prefix" }, `s3_bucket "bucket/prefix" is not a bucket name`},
		{"s3_endpoint without a scheme", func(c *Config) { c.S3Endpoint = "minio:9000" }, `s3_endpoint "minio:9000" is not an http(s) URL`},
		{"s3_endpoint not http", func(c *Config) { c.S3Endpoint = "ftp://minio" }, `s3_endpoint "ftp://minio" is not an http(s) URL`},
		{"prefix with newline", func(c *Config) { p := "a\nb"; c.S3Prefix = &p }, "s3_prefix contains the control character U+000A"},
		{"statement_timeout negative", func(c *Config) { c.StatementTimeout = -time.Second },
			"statement_timeout must be 0 (no limit) or a whole number of milliseconds up to 2147483647, got -1s"},
		{"statement_timeout below a millisecond", func(c *Config) { c.StatementTimeout = 1500 * time.Microsecond },
			"statement_timeout must be 0 (no limit) or a whole number of milliseconds up to 2147483647, got 1.5ms"},
		{"statement_timeout over int32 milliseconds", func(c *Config) { c.StatementTimeout = 25 * 24 * time.Hour },
			"statement_timeout must be 0 (no limit) or a whole number of milliseconds up to 2147483647, got 600h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.change(&c)
			_, _, err := c.validate()
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("got  %v\nwant %s", err, tt.want)
			}
			if sdk.StatusOf(err) != sdk.StatusBadConfig {
				t.Fatalf("status %v, want BAD_CONFIG", sdk.StatusOf(err))
			}
		})
	}
}

func TestValidateStaticKeys(t *testing.T) {
	c := validConfig()
	c.AWSAccessKeyID, c.AWSSecretAccessKey = "AKIA", "secret"
	_, _, err := c.validate()
	if o := c.s3Options(); err != nil || o.AccessKey != "AKIA" || o.SecretKey != "secret" {
		t.Fatalf("both keys: %v %+v", err, o)
	}
	c.AWSAccessKeyID, c.AWSSecretAccessKey = "", ""
	if _, _, err = c.validate(); err != nil || c.s3Options().AccessKey != "" {
		t.Fatalf("no keys (default chain): %v", err)
	}
}

// The S3 client never retries (the spec: a failed upload fails the batch)
// and takes a plain http endpoint such as MinIO's.
func TestS3Options(t *testing.T) {
	c := validConfig()
	c.S3Endpoint = "http://minio:9000"
	if _, _, err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if o := c.s3Options(); o.Retries != s3client.NoRetries || !o.AllowHTTP || o.Endpoint != c.S3Endpoint || o.Region != c.AWSRegion {
		t.Fatalf("%+v", o)
	}
}

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
	for _, k := range []string{keyConnectionString, keyTargetTable, keyIAMRole, keyS3Bucket, keyS3Prefix, keyS3Endpoint,
		keyBatchSize, keyMaxConnections, keyMaxRetries, keyPayloadFormat, keyStatementTimeout,
		keyAuth, keyIAMCluster, keyIAMWorkgroup, keyIAMDbUser, keyIAMRegion, keyIAMDuration} {
		if !declared[k] {
			t.Errorf("%q is not a config key", k)
		}
	}
}

func TestPayloadFormatFallbacks(t *testing.T) {
	tests := []struct {
		format  string
		want    rsql.PayloadFormat
		warning string
	}{
		{"varbyte", rsql.PayloadVarbyte, ""},
		{"text", rsql.PayloadText, ""},
		{"TEXT", rsql.PayloadText, ""},
		{" Varbyte ", rsql.PayloadVarbyte, ""},
		{"json", rsql.PayloadText, "Json is not supported, falling back to Text"},
		{"JSON", rsql.PayloadText, "Json is not supported, falling back to Text"},
		{"super", rsql.PayloadSuper, ""},
		{" SUPER ", rsql.PayloadSuper, ""},
		{"jsonb", rsql.PayloadVarbyte, `payload_format "jsonb" is not supported, falling back to Varbyte`},
		{"", rsql.PayloadVarbyte, `payload_format "" is not supported, falling back to Varbyte`},
	}
	for _, tt := range tests {
		c := validConfig()
		c.PayloadFormat = tt.format
		s, warnings, err := c.validate()
		if err != nil {
			t.Fatalf("%q: %v", tt.format, err)
		}
		p := s.layout.Columns[s.layout.Position(rsql.Payload)]
		if (p.Family == rsql.FamilyVarchar) != (tt.want == rsql.PayloadText) || (p.Family == rsql.FamilySuper) != (tt.want == rsql.PayloadSuper) {
			t.Errorf("%q: payload column %s", tt.format, p.Type)
		}
		got := strings.Join(warnings, "|")
		if got != tt.warning {
			t.Errorf("%q: warnings %q, want %q", tt.format, got, tt.warning)
		}
	}
}

func TestStatementTimeout(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 10 * time.Minute, 24 * 24 * time.Hour} {
		c := validConfig()
		c.StatementTimeout = d
		if _, _, err := c.validate(); err != nil {
			t.Errorf("statement_timeout %s: %v", d, err)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"1s", time.Second},
		{"250ms", 250 * time.Millisecond},
		{"0s", 0},
		{" 2s ", 2 * time.Second},
		{"soon", time.Second},
		{"", time.Second},
		{"5", time.Second},
		{"-3s", time.Second},
	}
	for _, tt := range tests {
		c := validConfig()
		c.RetryDelay = tt.in
		s, warnings, err := c.validate()
		if err != nil || s.retryDelay != tt.want || len(warnings) != 0 {
			t.Errorf("retry_delay %q: %v, %v, warnings %v; want %v silently", tt.in, err, s.retryDelay, warnings, tt.want)
		}
	}
}

func TestMaxRetriesBelowOne(t *testing.T) {
	c := validConfig()
	c.MaxRetries = 0
	s, warnings, err := c.validate()
	if err != nil || s.attempts != 1 || len(warnings) != 1 || !strings.Contains(warnings[0], "max_retries = 0") {
		t.Fatalf("%v %d %v", err, s.attempts, warnings)
	}
}

func TestPrefixNormalised(t *testing.T) {
	for in, want := range map[string]string{"": "", "/": "", "a/b/": "a/b", "/a": "a", "a": "a"} {
		c := validConfig()
		c.S3Prefix = &in
		s, _, err := c.validate()
		if err != nil || s.prefix != want {
			t.Errorf("prefix %q: %q, %v; want %q", in, s.prefix, err, want)
		}
		st := &store{bucket: "b", prefix: s.prefix}
		key := st.key("0190.parquet")
		wantKey := "0190.parquet"
		wantArchive := "archive/messages/0190.parquet"
		if want != "" {
			wantKey = want + "/" + wantKey
			wantArchive = want + "/" + wantArchive
		}
		if key != wantKey || st.archiveKey(key) != wantArchive {
			t.Errorf("prefix %q: key %q archive %q", in, key, st.archiveKey(key))
		}
	}
}

func TestSchemaQualified(t *testing.T) {
	for tmpl, want := range map[string]bool{
		"analytics.orders":          true,
		"analytics.orders_{topic}":  true,
		"orders_{topic}":            false,
		"orders_{topic_segment[1]}": false,
		"orders":                    false,
	} {
		c := validConfig()
		c.TargetTable = tmpl
		s, _, err := c.validate()
		if err != nil {
			t.Fatal(err)
		}
		if got := schemaQualified(s.table); got != want {
			t.Errorf("%q: %v, want %v", tmpl, got, want)
		}
	}
}

// A batch_size that splits a batch of the runtime's default batch_length
// into more COPYs than the default batch_size does is warned about, naming
// both keys; the default itself is not.
func TestValidateWarnsAboutManyCopies(t *testing.T) {
	for _, tt := range []struct {
		size int
		want string // "" for no warning
	}{
		{100, ""},
		{1000, ""},
		{20000, ""},
		{99, "batch_size = 99 loads a batch of 1000 records (the runtime's default batch_length) with 11 COPYs"},
		{1, "batch_size = 1 loads a batch of 1000 records (the runtime's default batch_length) with 1000 COPYs"},
	} {
		c := validConfig()
		c.BatchSize = tt.size
		_, warnings, err := c.validate()
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(warnings, "\n")
		if tt.want == "" && got != "" || !strings.HasPrefix(got, tt.want) {
			t.Errorf("batch_size %d: warnings %q, want %q", tt.size, got, tt.want)
		}
		if tt.want != "" && !strings.Contains(got, "set batch_size near the topic's batch_length") {
			t.Errorf("batch_size %d: the warning does not say what to do: %q", tt.size, got)
		}
	}
}
