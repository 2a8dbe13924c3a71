package redshifttest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
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
		se := openErr(t, rt, "validation", cfg)
		if se.Code != hostclient.StatusBadConfig || !strings.HasPrefix(se.Message, tc.want) {
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

// Describe: describe() lists every key of the spec's configuration table
// with its type, default and required flag, flags the secrets, and carries
// no values. It needs no services (Offline). (How the C host grows its
// buffer for the document stays in e2e/redshift.)
func Describe(t *testing.T, d sinkdriver.Driver, _ *Env) {
	doc, err := d.Start(t).Describe()
	if err != nil {
		t.Fatal(err)
	}
	var desc struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		ABIVersion string `json:"abi_version"`
		Config     []struct {
			Key      string  `json:"key"`
			Type     string  `json:"type"`
			Default  *string `json:"default"`
			Required bool    `json:"required"`
			Secret   bool    `json:"secret"`
		} `json:"plugin_config"`
	}
	if err := json.Unmarshal([]byte(doc), &desc); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if desc.Name != "redshift_sink" || desc.ABIVersion != "1.5" || desc.Version == "" {
		t.Errorf("name %q abi %q version %q", desc.Name, desc.ABIVersion, desc.Version)
	}
	// key, type, default ("-" for none), required, secret
	want := []string{
		"connection_string string - required secret",
		"target_table template - required -",
		"aws_iam_role string - required -",
		"s3_bucket string - required -",
		"s3_prefix string - required -",
		"aws_region string - required -",
		"s3_endpoint string - - -",
		"aws_access_key_id string - - secret",
		"aws_secret_access_key string - - secret",
		"batch_size int 100 - -",
		"max_connections int 5 - -",
		"include_metadata bool true - -",
		"include_key bool true - -",
		"payload_format string varbyte - -",
		"max_retries int 3 - -",
		"retry_delay string 1s - -",
		"statement_timeout duration 10m - -",
		"auth string password - -",
		"iam_cluster_identifier string - - -",
		"iam_workgroup_name string - - -",
		"iam_db_user string - - -",
		"iam_region string - - -",
		"iam_duration duration 15m - -",
		"write_mode string append - -",
		"key_columns string - - -",
		"change_format string op_field - -",
		"op_field string _op - -",
		"archive bool false - -",
		"verbose_logging bool false - -",
	}
	var got []string
	secret, defaults := map[string]bool{}, map[string]string{}
	for _, f := range desc.Config {
		def, req, sec := "-", "-", "-"
		if f.Default != nil {
			def = *f.Default
			defaults[f.Key] = def
		}
		if f.Required {
			req = "required"
		}
		if f.Secret {
			sec = "secret"
		}
		secret[f.Key] = f.Secret
		got = append(got, strings.Join([]string{f.Key, f.Type, def, req, sec}, " "))
	}
	if !slices.Equal(got, want) {
		t.Errorf("describe config:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, k := range []string{"connection_string", "aws_access_key_id", "aws_secret_access_key"} {
		if !secret[k] {
			t.Errorf("%s is not flagged secret", k)
		}
	}
	for k, v := range map[string]string{"batch_size": "100", "max_connections": "5", "include_metadata": "true", "include_key": "true",
		"payload_format": "varbyte", "max_retries": "3", "retry_delay": "1s", "statement_timeout": "10m", "archive": "false",
		"verbose_logging": "false", "auth": "password", "iam_duration": "15m", "write_mode": "append", "change_format": "op_field", "op_field": "_op"} {
		if defaults[k] != v {
			t.Errorf("default of %s is %q, want %q", k, defaults[k], v)
		}
	}
	// The spec's 18, statement_timeout (the bound on the staging lock wait),
	// the six of IAM authentication and the four of write_mode = "upsert".
	if len(desc.Config) != 29 {
		t.Errorf("%d keys, want the spec's 18, statement_timeout, auth with its five iam_ keys and write_mode with its three", len(desc.Config))
	}
	if strings.Contains(doc, "REDACTED") {
		t.Errorf("describe carries values: %s", doc)
	}
}

// offlineConfig is a complete plugin_config whose connection string points
// at a closed port: nothing is reached, whatever open tries.
func offlineConfig(t *testing.T, password string, overrides map[string]any) map[string]any {
	cfg := map[string]any{
		"connection_string": "postgres://loader:" + password + "@" + closedPort(t) + "/analytics?sslmode=disable&connect_timeout=5",
		"target_table":      "orders_{topic_segment[-1]}",
		"aws_iam_role":      "arn:aws:iam::123456789012:role/RedshiftCopy",
		"s3_bucket":         "picomq-staging",
		"s3_prefix":         "redshift/orders",
		"aws_region":        "eu-west-1",
	}
	for k, v := range overrides {
		cfg[k] = v
	}
	return cfg
}

// UnreachableEndpointIsRetry: "Failed to connect to Redshift at start" for
// an unreachable endpoint is RETRY (it may come back), with the password
// nowhere. The payload_format warnings are logged at open even so, and an
// unparsable retry_delay falls back silently. It needs no services
// (Offline).
func UnreachableEndpointIsRetry(t *testing.T, d sinkdriver.Driver, _ *Env) {
	const password = "hunter2-secret-pw"
	for _, tc := range []struct {
		format, warning string
	}{
		{"json", "WARN Json is not supported, falling back to Text"},
		{"parquet", `WARN payload_format "parquet" is not supported, falling back to Varbyte`},
	} {
		rt := d.Start(t, password)
		se := openErr(t, rt, "unreachable", offlineConfig(t, password, map[string]any{
			"payload_format": tc.format, "s3_prefix": "", "retry_delay": "whenever"})) // s3_prefix is required, but may be empty
		if se.Code != hostclient.StatusRetry || !strings.HasPrefix(se.Message, "Failed to connect to Redshift: ") {
			t.Errorf("%s: got %v, want RETRY Failed to connect to Redshift: ...", tc.format, se)
		}
		if strings.Contains(se.Message, password) {
			t.Errorf("%s: the password leaked: %v", tc.format, se)
		}
		logs := strings.Join(rt.Logs(), "\n")
		if !strings.Contains(logs, tc.warning) {
			t.Errorf("%s: warning %q missing:\n%s", tc.format, tc.warning, logs)
		}
		if strings.Contains(logs, "retry_delay") {
			t.Errorf("%s: an unparsable retry_delay is not silent:\n%s", tc.format, logs)
		}
	}
}

// RefusedPasswordIsBadConfig: a refused password (28P01) fails open()
// BAD_CONFIG, since the same credentials are refused every time; the
// password appears neither in the message nor in a log line.
func RefusedPasswordIsBadConfig(t *testing.T, d sinkdriver.Driver, e *Env) {
	e.NeedEmulator("Redshift's own refusal of a wrong password has not been checked against the 28P01 of the emulator's backend")
	const wrong = "wrong-pw-0451xyz"
	u, err := url.Parse(e.DSN())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), wrong)
	rt := d.Start(t, append(e.Secrets(), wrong)...)
	se := openErr(t, rt, "refused", e.Config(map[string]any{"connection_string": u.String()}))
	if se.Code != hostclient.StatusBadConfig || !strings.HasPrefix(se.Message, "Failed to connect to Redshift: connection_string: ") ||
		!strings.Contains(se.Message, "password authentication failed") || !strings.Contains(se.Message, "SQLSTATE 28P01") {
		t.Errorf("wrong password: %v", se)
	}
	if strings.Contains(se.Message, wrong) {
		t.Errorf("the password leaked: %v", se)
	}
}

// UnknownDatabaseIsBadConfig: a connection_string naming a database the
// cluster does not have (SQLSTATE 3D000) fails open() BAD_CONFIG, like a
// static table that does not exist: the destination answered no, and only
// the configuration (or the operator creating the database) changes that.
func UnknownDatabaseIsBadConfig(t *testing.T, d sinkdriver.Driver, e *Env) {
	e.NeedEmulator("the emulator passes its backend's 3D000 through; Redshift's own answer has not been checked")
	u, err := url.Parse(e.DSN())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/picomq_no_such_database"
	se := openErr(t, d.Start(t, e.Secrets()...), "nodb", e.Config(map[string]any{"connection_string": u.String()}))
	if se.Code != hostclient.StatusBadConfig || !strings.HasPrefix(se.Message, "Failed to connect to Redshift: connection_string: ") ||
		!strings.Contains(se.Message, "SQLSTATE 3D000") || !strings.Contains(se.Message, "picomq_no_such_database") {
		t.Errorf("unknown database: %v", se)
	}
}

// PayloadFormatWarnings: "Json is not supported, falling back to Text":
// payload_format = "json" logs it at open, the one warning, and loads text;
// an unknown value warns and falls back to varbyte; an unparsable
// retry_delay falls back to 1s silently.
func PayloadFormatWarnings(t *testing.T, d sinkdriver.Driver, _ *Env) { // each case has a destination of its own
	for _, tc := range []struct {
		format, table, warning, payloadType string
	}{
		{"json", "as_json", "Json is not supported, falling back to Text", "character varying(65535)"},
		{"parquet", "as_parquet", `payload_format "parquet" is not supported, falling back to Varbyte`, "varbyte(16777216)"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			e := NewEnv(t)
			if tc.format == "parquet" {
				e.needBytes()
			}
			table := e.Table(tc.table)
			inst := e.Start(d).Open(tc.table, e.Config(map[string]any{"target_table": table, "payload_format": tc.format, "retry_delay": "whenever"}))
			var warns []string
			for _, l := range inst.Logs() {
				if w, ok := strings.CutPrefix(l, "WARN "); ok {
					warns = append(warns, w)
				}
			}
			if !slices.Equal(warns, []string{tc.warning}) {
				t.Errorf("warnings %q, want exactly %q", warns, tc.warning)
			}
			if logs := strings.Join(inst.Logs(), "\n"); strings.Contains(logs, "retry_delay") {
				t.Errorf("an unparsable retry_delay is not silent:\n%s", logs)
			}
			b := Batch("orders", 0, 3)
			consume(t, inst, b)
			if def := e.TableDef(table); len(def) != 8 || def[6] != "payload "+tc.payloadType {
				t.Errorf("columns %v", def)
			}
			rows := e.Rows(table)
			if len(rows) != len(b.Records) {
				t.Fatalf("%d rows, want %d", len(rows), len(b.Records))
			}
			for i, r := range rows {
				if fmt.Sprintf("%s", r["payload"]) != string(b.Records[i].Payload) {
					t.Errorf("payload %q", r["payload"])
				}
			}
		})
	}
}
