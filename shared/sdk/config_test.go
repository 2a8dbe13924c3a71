package sdk_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

type testConfig struct {
	URI      string         `config:"table_uri,required,template" doc:"Where | to write"`
	Secret   string         `config:"secret_key,secret" doc:"A secret"`
	Flag     *bool          `config:"allow_http" doc:"Optional bool"`
	Size     int            `config:"batch_size" default:"100" doc:"Rows"`
	Delay    time.Duration  `config:"retry_delay" default:"1s" doc:"Delay"`
	Ratio    float64        `config:"ratio" doc:"A float"`
	OptDelay *time.Duration `config:"opt_delay" doc:"Optional duration"`
	Ignored  string
}

func envOf(kv ...string) sdk.Env {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	var list []string
	for k, v := range m {
		list = append(list, k+"="+v)
	}
	return sdk.Env{Lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }, Environ: list}
}

func decode(t *testing.T, raw string, env sdk.Env) (testConfig, sdk.Decoded, error) {
	t.Helper()
	s, err := sdk.SchemaOf[testConfig]()
	if err != nil {
		t.Fatal(err)
	}
	var c testConfig
	d, err := s.Decode(json.RawMessage(raw), "orders_delta", env, &c)
	return c, d, err
}

func TestDecodeDefaultsAndJSON(t *testing.T) {
	c, d, err := decode(t, `{"table_uri":"file:///t/{topic}","allow_http":true,"ratio":0.5,"opt_delay":"250ms"}`, envOf())
	if err != nil {
		t.Fatal(err)
	}
	if c.URI != "file:///t/{topic}" || c.Flag == nil || !*c.Flag || c.Size != 100 || c.Delay != time.Second || c.Ratio != 0.5 || c.OptDelay == nil || *c.OptDelay != 250*time.Millisecond {
		t.Fatalf("decoded %+v", c)
	}
	if len(d.Warnings) != 0 || len(d.Secrets) != 0 {
		t.Fatalf("unexpected %+v", d)
	}
}

func TestDecodeAbsentOptionalStaysNil(t *testing.T) {
	c, _, err := decode(t, `{"table_uri":"x","allow_http":null}`, envOf())
	if err != nil {
		t.Fatal(err)
	}
	if c.Flag != nil || c.OptDelay != nil {
		t.Fatalf("optional fields set: %+v", c)
	}
}

func TestDecodeEnvOverridesWin(t *testing.T) {
	env := envOf(
		"PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_SECRET_KEY", "s3cr3t-from-env",
		"PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_BATCH_SIZE", "7",
		"PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_ALLOW_HTTP", "false",
		"PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_RETRY_DELAY", "3s",
		"PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_TABLE_URI", "s3://env/t",
		"PICOMQ_CONNECTORS_SINK_OTHER_PLUGIN_CONFIG_BATCH_SIZE", "9",
	)
	c, d, err := decode(t, `{"table_uri":"file:///json","secret_key":"from-json","batch_size":5,"allow_http":true}`, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.URI != "s3://env/t" || c.Secret != "s3cr3t-from-env" || c.Size != 7 || *c.Flag || c.Delay != 3*time.Second {
		t.Fatalf("env did not win: %+v", c)
	}
	if len(d.Secrets) != 1 || d.Secrets[0] != "s3cr3t-from-env" {
		t.Fatalf("secrets %q", d.Secrets)
	}
}

func TestDecodeEnvKeyIsUpperCasedAndSanitised(t *testing.T) {
	s, _ := sdk.SchemaOf[testConfig]()
	var c testConfig
	env := envOf("PICOMQ_CONNECTORS_SINK_MY_SINK_1_PLUGIN_CONFIG_TABLE_URI", "file:///x")
	if _, err := s.Decode(nil, "my-sink.1", env, &c); err != nil {
		t.Fatal(err)
	}
	if c.URI != "file:///x" {
		t.Fatalf("got %q", c.URI)
	}
}

func TestDecodeErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		name, raw string
		env       sdk.Env
		want      string
	}{
		{"missing required", `{}`, envOf(), `plugin_config key "table_uri" is required`},
		{"empty required", `{"table_uri":""}`, envOf(), `plugin_config key "table_uri" is required`},
		{"string for int", `{"table_uri":"x","batch_size":"10"}`, envOf(), `plugin_config key "batch_size": expected int, got string`},
		{"fraction for int", `{"table_uri":"x","batch_size":1.5}`, envOf(), `plugin_config key "batch_size": expected int, got 1.5`},
		{"number for bool", `{"table_uri":"x","allow_http":1}`, envOf(), `plugin_config key "allow_http": expected bool, got number`},
		{"object for string", `{"table_uri":{"a":1}}`, envOf(), `plugin_config key "table_uri": expected template, got object`},
		{"bad duration", `{"table_uri":"x","retry_delay":"soon"}`, envOf(), `plugin_config key "retry_delay": time: invalid duration "soon"`},
		{"not an object", `[1,2]`, envOf(), `plugin_config must be a JSON object`},
		{"bad env int", `{"table_uri":"x"}`, envOf("PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_BATCH_SIZE", "ten"),
			`environment override PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_BATCH_SIZE for plugin_config key "batch_size": cannot parse "ten" as int`},
		{"bad env bool", `{"table_uri":"x"}`, envOf("PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_ALLOW_HTTP", "yes please"),
			`for plugin_config key "allow_http": cannot parse "yes please" as bool`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decode(t, tc.raw, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if sdk.StatusOf(err) != sdk.StatusBadConfig {
				t.Fatalf("status %v, want BAD_CONFIG", sdk.StatusOf(err))
			}
		})
	}
}

func TestDecodeNeverEchoesSecretValues(t *testing.T) {
	type secretInt struct {
		Pin int `config:"pin,secret"`
	}
	s, err := sdk.SchemaOf[secretInt]()
	if err != nil {
		t.Fatal(err)
	}
	var c secretInt
	_, err = s.Decode(nil, "k", envOf("PICOMQ_CONNECTORS_SINK_K_PLUGIN_CONFIG_PIN", "hunter2"), &c)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v leaks or is missing", err)
	}
	_, err = s.Decode(json.RawMessage(`{"pin":1234.5}`), "k", envOf(), &c)
	if err == nil || strings.Contains(err.Error(), "1234") {
		t.Fatalf("error %v leaks or is missing", err)
	}
}

func TestDecodeRefusesUnknownKeysNamingTheNearest(t *testing.T) {
	const prefix = "PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_"
	known := "known keys: table_uri, secret_key, allow_http, batch_size, retry_delay, ratio, opt_delay"
	cases := []struct {
		name, raw string
		env       sdk.Env
		want      string
	}{
		{"typo", `{"table_uri":"x","batch_sise":5}`, envOf(),
			`plugin_config key "batch_sise" is not known to this plugin; did you mean "batch_size"?`},
		{"swapped letters", `{"tabel_uri":"x"}`, envOf(),
			`plugin_config key "tabel_uri" is not known to this plugin; did you mean "table_uri"?`},
		{"case", `{"table_uri":"x","Ratio":1}`, envOf(),
			`plugin_config key "Ratio" is not known to this plugin; did you mean "ratio"?`},
		{"nothing near", `{"table_uri":"x","compression":"zstd"}`, envOf(),
			`plugin_config key "compression" is not known to this plugin; ` + known},
		{"null value", `{"table_uri":"x","unknown":null}`, envOf(), `plugin_config key "unknown" is not known`},
		{"every unknown key", `{"table_uri":"x","zz":1,"aa":2}`, envOf(),
			`plugin_config key "aa" is not known to this plugin; ` + known + `; plugin_config key "zz" is not known`},
		{"override typo", `{"table_uri":"x"}`, envOf(prefix+"SECRET_KYE", "s3cr3t-value"),
			`environment override ` + prefix + `SECRET_KYE names no plugin_config key of this plugin; did you mean ` + prefix + `SECRET_KEY (key "secret_key")?`},
		{"override nothing near", `{"table_uri":"x"}`, envOf(prefix+"COMPRESSION", "zstd"),
			`environment override ` + prefix + `COMPRESSION names no plugin_config key of this plugin; ` + known},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decode(t, tc.raw, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if sdk.StatusOf(err) != sdk.StatusBadConfig {
				t.Fatalf("status %v, want BAD_CONFIG", sdk.StatusOf(err))
			}
			if strings.Contains(err.Error(), "s3cr3t-value") {
				t.Fatalf("error echoes an override's value: %v", err)
			}
		})
	}
}

func TestDecodeLeavesOtherSinksOverridesAlone(t *testing.T) {
	env := envOf(
		// Another sink's key; and one whose key extends this one's, so
		// its variable starts with this sink's prefix.
		"PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_2_PLUGIN_CONFIG_TYPO", "1",
		"PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_X_PLUGIN_CONFIG_BATCH_SIZE", "9",
		"PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_BATCH_SIZE", "7",
	)
	c, d, err := decode(t, `{"table_uri":"x"}`, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Size != 7 {
		t.Fatalf("batch_size %d", c.Size)
	}
	want := "environment variable PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_X_PLUGIN_CONFIG_BATCH_SIZE names no plugin_config key of this sink; ignored as another sink's"
	if len(d.Warnings) != 1 || d.Warnings[0] != want {
		t.Fatalf("warnings %q", d.Warnings)
	}
}

// CheckConfig, given the fields as describe() prints them, refuses what
// Decode refuses with Decode's messages, and reports every problem at once.
func TestCheckConfigIsDecodeOnDescribedFields(t *testing.T) {
	type ptrConfig struct {
		Prefix *string `config:"prefix,required"`
		Name   string  `config:"name,required"`
	}
	const prefix = "PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_"
	cases := []struct {
		name, raw string
		env       sdk.Env
	}{
		{"good", `{"table_uri":"x","batch_size":5}`, envOf()},
		{"unknown, wrong type, missing", `{"tabel_uri":"x","batch_size":"5","allow_http":1}`, envOf()},
		{"required from the environment", `{}`, envOf(prefix+"TABLE_URI", "s3://b/t")},
		{"empty required", `{"table_uri":""}`, envOf()},
		{"bad override and unknown override", `{"table_uri":"x"}`, envOf(prefix+"RETRY_DELAY", "soon", prefix+"SECRET_KYE", "s3cr3t-value")},
		{"secret from the environment", `{"table_uri":"x"}`, envOf(prefix+"SECRET_KEY", "s3cr3t-value")},
		{"not an object", `[1]`, envOf()},
	}
	s, err := sdk.SchemaOf[testConfig]()
	if err != nil {
		t.Fatal(err)
	}
	described := func(s *sdk.Schema) []sdk.Field {
		js, err := json.Marshal(s.Fields)
		if err != nil {
			t.Fatal(err)
		}
		var fields []sdk.Field
		if err := json.Unmarshal(js, &fields); err != nil {
			t.Fatal(err)
		}
		return fields
	}
	fields := described(s)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problems := sdk.CheckConfig(fields, json.RawMessage(tc.raw), "orders_delta", tc.env)
			_, _, err := decode(t, tc.raw, tc.env)
			if err == nil {
				if len(problems) != 0 {
					t.Fatalf("Decode accepts what CheckConfig refuses: %q", problems)
				}
				return
			}
			if got := strings.Join(problems, "; "); got != err.Error() {
				t.Fatalf("CheckConfig %q\nDecode      %q", got, err)
			}
			if strings.Contains(err.Error(), "s3cr3t-value") {
				t.Fatalf("a secret value in %v", err)
			}
		})
	}
	if got := sdk.CheckConfig(fields, json.RawMessage(`{"tabel_uri":"x","batch_size":"5","allow_http":1}`), "orders_delta", envOf()); len(got) != 4 {
		t.Errorf("every problem: got %q, want unknown key, two wrong types and the missing key", got)
	}
	// A required pointer may be empty; a required plain string may not.
	ps, err := sdk.SchemaOf[ptrConfig]()
	if err != nil {
		t.Fatal(err)
	}
	got := sdk.CheckConfig(described(ps), json.RawMessage(`{"prefix":"","name":""}`), "k", envOf())
	if want := []string{`plugin_config key "name" is required`}; !slices.Equal(got, want) {
		t.Errorf("empty values: got %q, want %q", got, want)
	}
	var pc ptrConfig
	if _, err := ps.Decode(json.RawMessage(`{"prefix":"","name":"n"}`), "k", envOf(), &pc); err != nil || pc.Prefix == nil || *pc.Prefix != "" {
		t.Errorf("empty required pointer: %+v, %v", pc, err)
	}
}

func TestEnvFromFirstEntryWins(t *testing.T) {
	env := sdk.EnvFrom([]string{"A=1", "B=x=y", "A=2", "NOEQUALS", "E="})
	for name, want := range map[string]string{"A": "1", "B": "x=y", "E": ""} {
		if v, ok := env.Lookup(name); !ok || v != want {
			t.Errorf("%s = %q, %v; want %q", name, v, ok, want)
		}
	}
	if _, ok := env.Lookup("NOEQUALS"); ok {
		t.Error("an entry without '=' is a variable")
	}
}

func TestSchemaFieldsAndMarkdown(t *testing.T) {
	s, err := sdk.SchemaOf[testConfig]()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(s.Fields[:2])
	want := `[{"key":"table_uri","type":"template","default":null,"required":true,"non_empty":true,"secret":false,"description":"Where | to write"},` +
		`{"key":"secret_key","type":"string","default":null,"required":false,"secret":true,"description":"A secret"}]`
	if string(got) != want {
		t.Fatalf("fields\n got %s\nwant %s", got, want)
	}
	md := s.Markdown()
	for _, line := range []string{
		"| `table_uri` | template | none | yes | no | Where \\| to write |",
		"| `batch_size` | int | `100` | no | no | Rows |",
		"| `retry_delay` | duration | `1s` | no | no | Delay |",
	} {
		if !strings.Contains(md, line) {
			t.Errorf("markdown lacks %q:\n%s", line, md)
		}
	}
}

func TestSchemaRejectsBadDeclarations(t *testing.T) {
	type badType struct {
		X []string `config:"x"`
	}
	type badDefault struct {
		X int `config:"x" default:"many"`
	}
	type dup struct {
		A string `config:"x"`
		B string `config:"x"`
	}
	type badOpt struct {
		A string `config:"x,sekret"`
	}
	if _, err := sdk.SchemaOf[badType](); err == nil {
		t.Error("slice field accepted")
	}
	if _, err := sdk.SchemaOf[badDefault](); err == nil {
		t.Error("bad default accepted")
	}
	if _, err := sdk.SchemaOf[dup](); err == nil {
		t.Error("duplicate key accepted")
	}
	if _, err := sdk.SchemaOf[badOpt](); err == nil {
		t.Error("unknown option accepted")
	}
}

// FuzzDecode: any plugin_config either decodes with every key declared or is
// refused as BAD_CONFIG; it never panics, and a refusal never echoes the
// value of the secret key.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"table_uri":"x"}`, `{"table_uri":"x","batch_sise":5}`, `{"tabel_uri":"x"}`, `{"table_uri":"x","secret_key":"hunter2-x"}`,
		`{"table_uri":"x","secret_key":7}`, `null`, `[]`, `{"":1}`, `{"table_uri":"x","ratio":"1"}`,
	} {
		f.Add(seed)
	}
	s, err := sdk.SchemaOf[testConfig]()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var c testConfig
		_, err := s.Decode(json.RawMessage(raw), "k", envOf(), &c)
		if err != nil {
			if sdk.StatusOf(err) != sdk.StatusBadConfig {
				t.Fatalf("%q: %v is not BAD_CONFIG", raw, err)
			}
			if c.Secret != "" && len(c.Secret) > 3 && strings.Contains(err.Error(), c.Secret) {
				t.Fatalf("%q: error echoes the secret: %v", raw, err)
			}
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &obj) == nil {
			for k := range obj {
				if !slices.ContainsFunc(s.Fields, func(f sdk.Field) bool { return f.Key == k }) {
					t.Fatalf("%q: unknown key %q accepted", raw, k)
				}
			}
		}
	})
}
