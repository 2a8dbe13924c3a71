package definition_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/definition"
)

const spec = `type = "sink"
key = "orders_pg"
enabled = true
version = 0
name = "Orders to Postgres"
path = "libpicomq_connector_postgres_sink"

[[topics]]
pattern = 'orders\..*'
schema = "json"
batch_length = 1000
poll_interval = "100ms"

[plugin_config]
connection_string = "postgres://user:pass@db:5432/app"
target_table = "orders_{topic_segment[-1]}"
auto_create_table = true
`

// The spec's own example parses, with its defaults.
func TestSpecExample(t *testing.T) {
	d, err := definition.Parse("orders.toml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if d.Key != "orders_pg" || !d.Enabled || d.Name != "Orders to Postgres" || len(d.Topics) != 1 {
		t.Fatalf("%+v", d)
	}
	tp := d.Topics[0]
	if tp.Pattern != `^orders\..*` || tp.Schema != definition.SchemaJSON || tp.BatchLength != 1000 ||
		tp.PollInterval != 100*time.Millisecond || tp.ConsumerGroup != "picomq-connect-sink-orders_pg" ||
		tp.OffsetReset != definition.Earliest || tp.Index != 1 {
		t.Errorf("%+v", tp)
	}
	if got := d.LibraryPath("dist"); got != "dist/libpicomq_connector_postgres_sink.so" {
		t.Errorf("LibraryPath = %q", got)
	}
	js, err := d.OpenConfig()
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	want := `{"key":"orders_pg","name":"Orders to Postgres","plugin_config":{"auto_create_table":true,"connection_string":"postgres://user:pass@db:5432/app","target_table":"orders_{topic_segment[-1]}"},"version":0}`
	if got, _ := json.Marshal(v); string(got) != want {
		t.Errorf("OpenConfig:\n%s\nwant\n%s", got, want)
	}
}

func TestDefaultsAndOverrides(t *testing.T) {
	d, err := definition.Parse("d.toml", []byte(`type = "sink"
key = "k"
path = "/opt/lib/libx.so"
[[topics]]
topics = ["a", "b"]
schema = "raw"
[[topics]]
topics = ["c"]
pattern = '^c\d+'
schema = "text"
batch_length = 5
poll_interval = "2s"
max_batch_latency = "5s"
consumer_group = "g2"
auto_offset_reset = "latest"
[topics.properties]
"client.id" = "me"
"session.timeout.ms" = 30000
"fetch.max.bytes" = "1048576"
"security.protocol" = "SASL_SSL"
"sasl.mechanism" = "scram-sha-512"
"sasl.username" = "u"
"sasl.password" = "hunter2"
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := d.Topics[0], d.Topics[1]
	if a.BatchLength != definition.DefaultBatchLength || a.PollInterval != definition.DefaultPollInterval ||
		a.ConsumerGroup != "picomq-connect-sink-k" || a.Pattern != "" || a.Schema != definition.SchemaRaw || a.MaxBatchLatency != 0 {
		t.Errorf("block 1: %+v", a)
	}
	if b.Pattern != `^c\d+` || b.BatchLength != 5 || b.PollInterval != 2*time.Second || b.MaxBatchLatency != 5*time.Second || b.ConsumerGroup != "g2" ||
		b.OffsetReset != definition.Latest || b.Index != 2 {
		t.Errorf("block 2: %+v", b)
	}
	c := b.Client
	if c.ClientID != "me" || c.SessionTimeout != 30*time.Second || c.FetchMaxBytes != 1<<20 || !c.TLS ||
		c.SASLMechanism != "SCRAM-SHA-512" || c.SASLUser != "u" || c.SASLPassword != "hunter2" {
		t.Errorf("client: %+v", c)
	}
	if got := d.LibraryPath("dist"); got != "/opt/lib/libx.so" {
		t.Errorf("LibraryPath = %q", got)
	}
}

// Every refusal names the file, the line (when the key is written) and
// the key.
func TestRefused(t *testing.T) {
	const head = "type = \"sink\"\nkey = \"k\"\npath = \"p\"\n"
	const block = "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n"
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown top key", head + "colour = 1\n" + block, "f.toml:4:1: colour: unknown key"},
		{"unknown block key", head + block + "batch_lenght = 5\n", "f.toml:7:1: topics.batch_lenght: unknown key"},
		{"ill-typed", head + block + "batch_length = \"5\"\n", "f.toml:7:16: topics.batch_length: cannot decode TOML string"},
		{"float version", "type = \"sink\"\nkey = \"k\"\nversion = 1.5\npath = \"p\"\n" + block, "f.toml:3:11: version: cannot decode TOML float"},
		{"bad duration", head + block + "poll_interval = \"soon\"\n", "f.toml:7:17: topics.poll_interval"},
		{"zero duration", head + block + "poll_interval = \"0s\"\n", "must be above zero"},
		{"negative latency", head + block + "max_batch_latency = \"-1s\"\n", "f.toml:7:21: topics.max_batch_latency: duration \"-1s\" must be above zero"},
		{"avro without a schema", head + "[[topics]]\ntopics = [\"a\"]\nschema = \"avro\"\n", `f.toml:6:1: topics[1].schema: schema "avro" needs avro_schema_json or avro_schema_path, or schema_registry_url`},
		{"proto without a schema", head + "[[topics]]\ntopics = [\"a\"]\nschema = \"proto\"\n", `schema "proto" needs proto_descriptor_set_path and proto_message, or schema_registry_url`},
		{"unknown schema", head + "[[topics]]\ntopics = [\"a\"]\nschema = \"xml\"\n", `unknown schema "xml"`},
		{"no schema", head + "[[topics]]\ntopics = [\"a\"]\n", "f.toml:4:3: topics[1].schema: missing"},
		{"avro companion", head + block + "avro_schema_json = \"{}\"\n", `f.toml:7:1: topics[1].avro_schema_json: applies only with schema = "avro"`},
		{"batch_length 0", head + block + "batch_length = 0\n", "f.toml:7:1: topics[1].batch_length: 0 out of range"},
		{"offset reset", head + block + "auto_offset_reset = \"smallest\"\n", `auto_offset_reset "smallest"`},
		{"no subscription", head + "[[topics]]\nschema = \"json\"\n", "f.toml:4:3: topics[1].: [[topics]] block 1 names neither"},
		{"bad pattern", head + "[[topics]]\npattern = 'a('\nschema = \"json\"\n", "f.toml:5:1: topics[1].pattern: error parsing regexp"},
		{"no topics", head, "f.toml: topics: missing"},
		{"not a sink", "type = \"source\"\nkey = \"k\"\npath = \"p\"\n" + block, `f.toml:1:1: type: "source"`},
		{"no type", "key = \"k\"\npath = \"p\"\n" + block, "f.toml: type: missing"},
		{"bad key", "type = \"sink\"\nkey = \"a b\"\npath = \"p\"\n" + block, `f.toml:2:1: key: "a b"`},
		{"no key", "type = \"sink\"\npath = \"p\"\n" + block, `f.toml: key: missing: every sink has a key`},
		{"empty key", "type = \"sink\"\nkey = \"\"\npath = \"p\"\n" + block, `f.toml:2:1: key: missing: every sink has a key`},
		{"no path", "type = \"sink\"\nkey = \"k\"\n" + block, "f.toml: path: missing"},
		{"duplicate topic", head + "[[topics]]\ntopics = [\"a\", \"a\"]\nschema = \"json\"\n", `"a" is listed twice`},
		{"same group twice", head + block + block + "consumer_group = \"picomq-connect-sink-k\"\n", `f.toml:10:1: topics[2].consumer_group: "picomq-connect-sink-k" is the group of [[topics]] block 1 too`},
		{"unknown property", head + block + "[topics.properties]\n\"enable.auto.commit\" = \"true\"\n", `f.toml:8:1: topics[1].properties.enable.auto.commit: not a property`},
		{"inline property", head + block + "properties = { \"queued.min.messages\" = 1 }\n", `f.toml:7:1: topics[1].properties.queued.min.messages: not a property`},
		{"bad property number", head + block + "[topics.properties]\n\"fetch.min.bytes\" = \"lots\"\n", `"lots": want an integer`},
		{"property bool", head + block + "[topics.properties]\n\"client.id\" = true\n", "want a string or an integer, got bool"},
		{"sasl without protocol", head + block + "[topics.properties]\n\"sasl.mechanism\" = \"PLAIN\"\n\"sasl.username\" = \"u\"\n\"sasl.password\" = \"p\"\n", "SASL_PLAINTEXT or SASL_SSL go with a mechanism"},
		{"sasl without user", head + block + "[topics.properties]\n\"security.protocol\" = \"SASL_SSL\"\n\"sasl.mechanism\" = \"PLAIN\"\n", "PLAIN needs sasl.username and sasl.password"},
		{"gssapi", head + block + "[topics.properties]\n\"security.protocol\" = \"SASL_SSL\"\n\"sasl.mechanism\" = \"GSSAPI\"\n", `"GSSAPI": want PLAIN`},
		{"ca without tls", head + block + "[topics.properties]\n\"ssl.ca.location\" = \"/etc/hosts\"\n", "set without security.protocol SSL"},
		{"syntax", head + "[[topics]\n", "f.toml"},
		{"errors_tolerance", head + block + "errors_tolerance = \"some\"\n", `f.toml:7:1: topics[1].errors_tolerance: "some": want none or all`},
		{"dlq without tolerance", head + block + "dead_letter_topic = \"x\"\n", `topics[1].dead_letter_topic: applies only with errors_tolerance = "all"`},
		{"dlq bad name", head + block + "errors_tolerance = \"all\"\ndead_letter_topic = \"a b\"\n", `"a b" is not a Kafka topic name`},
		// Named in topics: consumed on purpose, so it cannot take dead letters (a
		// pattern alone would leave it out, see TestDeadLetterExcludes).
		{"dlq consumed", head + "[[topics]]\npattern = 'a.*'\ntopics = [\"a.dlq\"]\nschema = \"json\"\nerrors_tolerance = \"all\"\ndead_letter_topic = \"a.dlq\"\n", `"a.dlq" is consumed by this block`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := definition.Parse("f.toml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// The SASL password never shows in an error or a printed Client.
func TestSecretNotPrinted(t *testing.T) {
	d, err := definition.Parse("f.toml", []byte("type = \"sink\"\nkey = \"k\"\npath = \"p\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n"+
		"[topics.properties]\n\"security.protocol\" = \"SASL_SSL\"\n\"sasl.mechanism\" = \"PLAIN\"\n\"sasl.username\" = \"u\"\n\"sasl.password\" = \"hunter2\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmtV(d.Topics[0].Client), fmtGo(d.Topics[0].Client)} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("printed: %s", s)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	def := func(key string) string {
		return "type = \"sink\"\nkey = \"" + key + "\"\npath = \"p\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n"
	}
	write("b.toml", def("b"))
	write("a.toml", def("a"))
	write("notes.txt", "not a definition")
	defs, err := definition.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 2 || defs[0].Key != "a" || defs[1].Key != "b" {
		t.Fatalf("Load(dir) = %v", defs)
	}
	dup := write("dup.toml.x", def("A"))
	if _, err := definition.Load(dir, dup); err == nil || !strings.Contains(err.Error(), `"A" is the key of`) {
		t.Errorf("duplicate key: %v", err)
	}
	bad := write("bad.toml.x", def("c")+"x = 1\n")
	if _, err := definition.Load(bad); err == nil || !strings.Contains(err.Error(), "bad.toml.x:7:1: topics.x: unknown key") {
		t.Errorf("bad file: %v", err)
	}
	if _, err := definition.Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no *.toml") {
		t.Errorf("empty dir: %v", err)
	}
}

func TestGroupPerBlock(t *testing.T) {
	d, err := definition.Parse("f.toml", []byte("type = \"sink\"\nkey = \"k\"\npath = \"p\"\n"+
		"[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n[[topics]]\ntopics = [\"b\"]\nschema = \"json\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if g1, g2 := d.Topics[0].ConsumerGroup, d.Topics[1].ConsumerGroup; g1 != "picomq-connect-sink-k" || g2 != "picomq-connect-sink-k-2" {
		t.Errorf("groups %q, %q", g1, g2)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(spec))
	f.Add([]byte("type = \"sink\"\nkey = \"k\"\npath = \"p\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"raw\"\n[topics.properties]\n\"client.id\" = 1\n"))
	f.Add([]byte("[[topics]]\n[[topics]]\n[topics.properties]\na.b = 1\n"))
	f.Add([]byte("type = \"sink\"\nkey = \"k\"\npath = \"p\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"avro\"\nschema_registry_url = 'https://r:1,http://s'\n" +
		"schema_registry_timeout = \"2s\"\navro_schema_json = '\"long\"'\n[[topics]]\ntopics = [\"b\"]\nschema = \"proto\"\nproto_message = \"a.B\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := definition.Parse("f.toml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.toml") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		// What parses is complete and in range.
		if d.Key == "" || d.Path == "" || len(d.Topics) == 0 {
			t.Fatalf("accepted without key, path or topics: %+v", d)
		}
		for _, tp := range d.Topics {
			if tp.BatchLength < 1 || tp.PollInterval <= 0 || tp.ConsumerGroup == "" ||
				(len(tp.Topics) == 0 && tp.Pattern == "") || (tp.Pattern != "" && tp.Pattern[0] != '^') {
				t.Fatalf("accepted block %+v", tp)
			}
			switch tp.Schema {
			case definition.SchemaJSON, definition.SchemaText, definition.SchemaRaw:
			case definition.SchemaAvro:
				if tp.Registry == nil && tp.AvroSchemaJSON == "" && tp.AvroSchemaPath == "" {
					t.Fatalf("accepted avro without a schema: %+v", tp)
				}
			case definition.SchemaProto:
				if tp.Registry == nil && (tp.ProtoDescriptorSetPath == "" || tp.ProtoMessage == "") {
					t.Fatalf("accepted proto without a message: %+v", tp)
				}
			case definition.SchemaFlatbuffer:
				if tp.Registry != nil || tp.FlatbufferSchemaPath == "" {
					t.Fatalf("accepted flatbuffer %+v", tp)
				}
			default:
				t.Fatalf("accepted schema %q", tp.Schema)
			}
		}
		if _, err := d.OpenConfig(); err != nil && !strings.Contains(err.Error(), "plugin_config") {
			t.Fatalf("OpenConfig: %v", err)
		}
	})
}

// errors_tolerance defaults to none; with all, the dead-letter topic is
// <topic>.dlq unless dead_letter_topic names one.
func TestErrorsTolerance(t *testing.T) {
	const head = "type = \"sink\"\nkey = \"k\"\npath = \"p\"\n"
	d, err := definition.Parse("f.toml", []byte(head+"[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n"+
		"[[topics]]\ntopics = [\"b\"]\nschema = \"json\"\nerrors_tolerance = \"all\"\n"+
		"[[topics]]\ntopics = [\"c\"]\nschema = \"json\"\nerrors_tolerance = \"all\"\ndead_letter_topic = \"bad-things\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := d.Topics[0], d.Topics[1], d.Topics[2]
	if a.ErrorsTolerance != definition.ToleranceNone || b.ErrorsTolerance != definition.ToleranceAll || c.ErrorsTolerance != definition.ToleranceAll {
		t.Errorf("tolerances %s %s %s", a.ErrorsTolerance, b.ErrorsTolerance, c.ErrorsTolerance)
	}
	if got := b.DeadLetterFor("b"); got != "b.dlq" {
		t.Errorf("default dead-letter topic %q", got)
	}
	if got := c.DeadLetterFor("c"); got != "bad-things" {
		t.Errorf("dead-letter topic %q", got)
	}
}

func TestDeadLetterExcludes(t *testing.T) {
	const head = "type = \"sink\"\nkey = \"k\"\npath = \"p\"\n"
	for _, c := range []struct {
		block string
		want  []string
	}{
		{"pattern = 'orders\\..*'\nerrors_tolerance = \"all\"", []string{`\.dlq$`}},
		{"pattern = 'orders\\..*'\nerrors_tolerance = \"all\"\ndead_letter_topic = \"bad.things\"", []string{`^bad\.things$`}},
		{"pattern = 'orders\\..*'\ntopics = [\"x.dlq\"]\nerrors_tolerance = \"all\"", nil}, // named on purpose
		{"pattern = 'orders\\..*'", nil},                           // no dead letters
		{"topics = [\"orders\"]\nerrors_tolerance = \"all\"", nil}, // no pattern
	} {
		d, err := definition.Parse("f.toml", []byte(head+"[[topics]]\nschema = \"json\"\n"+c.block+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.block, err)
		}
		if got := d.Topics[0].DeadLetterExcludes(); !slices.Equal(got, c.want) {
			t.Errorf("%s: excludes %q, want %q", c.block, got, c.want)
		}
	}
}

// A library that is not there is refused naming the definition's path
// line, the path as written and the file it resolves to.
func TestCheckLibrary(t *testing.T) {
	dir := t.TempDir()
	d, err := definition.Parse("f.toml", []byte("type = \"sink\"\nkey = \"k\"\n\npath = \"test/libnope\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := `f.toml:4:1: path: "test/libnope" resolves to ` + dir + `/test/libnope.so: no such file or directory`
	if err := d.CheckLibrary(dir); err == nil || err.Error() != want {
		t.Errorf("CheckLibrary = %v\nwant %s", err, want)
	}
	if err := os.MkdirAll(filepath.Join(dir, "test"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "test", "libnope.so"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.CheckLibrary(dir); err != nil {
		t.Errorf("CheckLibrary of a file that exists: %v", err)
	}
}

// Every message in full, in the order they come, for documents with many
// problems: the checks are driven by the declaration in keys.go, and this
// pins what they say.
func TestMessages(t *testing.T) {
	const head = "type = \"sink\"\nkey = \"k\"\npath = \"p\"\n"
	for _, tc := range []struct{ doc, want string }{
		{"type = \"src\"\nkey = \"a b\"\nversion = -3\n[[topics]]\n", `f.toml:1:1: type: "src": this runtime runs sinks only (type = "sink")
f.toml:2:1: key: "a b": want 1 to 200 of [A-Za-z0-9_.-], starting with a letter or digit
f.toml:3:1: version: -3 must not be negative
f.toml: path: missing: the plugin library, such as "libpicomq_connector_delta_sink"
f.toml:4:3: topics[1].: [[topics]] block 1 names neither topics nor pattern
f.toml:4:3: topics[1].schema: missing: json, text, raw, avro, proto or flatbuffer`},
		{"", `f.toml: type: missing: a sink definition says type = "sink"
f.toml: key: missing: every sink has a key, 1 to 200 of [A-Za-z0-9_.-] starting with a letter or digit, such as "orders_delta"
f.toml: path: missing: the plugin library, such as "libpicomq_connector_delta_sink"
f.toml: topics: missing: a sink needs at least one [[topics]] block`},
		{head + "[[topics]]\ntopics = [\"\", \"x\", \"x\"]\npattern = ''\nschema = \"xml\"\navro_schema_json = \"\"\navro_schema_path = \"p\"\n" +
			"batch_length = 1000001\nconsumer_group = \"\"\nauto_offset_reset = \"x\"\nerrors_tolerance = \"some\"\ndead_letter_topic = \"a b\"\n" +
			"[topics.properties]\n\"security.protocol\" = \"tls\"\n\"sasl.mechanism\" = \"gssapi\"\n\"sasl.mechanisms\" = \"plain\"\n\"sasl.username\" = \"\"\n\"x\" = 1\n\"fetch.min.bytes\" = 0\n\"client.id\" = 1.5\n",
			`f.toml:5:1: topics[1].topics: an empty topic name
f.toml:5:1: topics[1].topics: "x" is listed twice
f.toml:6:1: topics[1].pattern: empty
f.toml:7:1: topics[1].schema: unknown schema "xml" (json, text, raw, avro, proto or flatbuffer)
f.toml:8:1: topics[1].avro_schema_json: applies only with schema = "avro"
f.toml:9:1: topics[1].avro_schema_path: applies only with schema = "avro"
f.toml:10:1: topics[1].batch_length: 1000001 out of range [1, 1000000]
f.toml:11:1: topics[1].consumer_group: empty: leave it out for picomq-connect-sink-k
f.toml:12:1: topics[1].auto_offset_reset: auto_offset_reset "x": want earliest or latest
f.toml:13:1: topics[1].errors_tolerance: "some": want none or all
f.toml:14:1: topics[1].dead_letter_topic: applies only with errors_tolerance = "all"
f.toml:22:1: topics[1].properties.client.id: want a string or an integer, got float64
f.toml:21:1: topics[1].properties.fetch.min.bytes: "0": want an integer in [1, 2147483647]
f.toml:19:1: topics[1].properties.sasl.username: empty
f.toml:20:1: topics[1].properties.x: not a property this runtime maps to its Kafka client (it understands bootstrap.servers, client.id, fetch.max.bytes, fetch.min.bytes, fetch.wait.max.ms, heartbeat.interval.ms, max.partition.fetch.bytes, sasl.mechanism, sasl.mechanisms, sasl.password, sasl.username, security.protocol, session.timeout.ms, ssl.ca.location)
f.toml:18:1: topics[1].properties.sasl.mechanisms: set together with sasl.mechanism; keep one
f.toml:16:1: topics[1].properties.security.protocol: "tls": want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
f.toml:17:1: topics[1].properties.sasl.mechanism: PLAIN needs sasl.username and sasl.password`},
		{head + "[[topics]]\npattern = 'a('\nschema = \"proto\"\n[[topics]]\nschema = \"flatbuffer\"\nconsumer_group = \"picomq-connect-sink-k\"\n",
			"f.toml:5:1: topics[1].pattern: error parsing regexp: missing closing ): `^a(`\n" +
				`f.toml:6:1: topics[1].schema: schema "proto" needs proto_descriptor_set_path and proto_message, or schema_registry_url
f.toml:7:3: topics[2].: [[topics]] block 2 names neither topics nor pattern
f.toml:8:1: topics[2].schema: schema "flatbuffer" needs flatbuffer_schema_path
f.toml:9:1: topics[2].consumer_group: "picomq-connect-sink-k" is the group of [[topics]] block 1 too: two consumers in one group split its partitions`},
		{head + "topics = [{topics = [\"a\"], schema = \"json\", properties = {\"client.id\" = \"\"}}]\n", "f.toml: topics[1].properties.client.id: empty"},
	} {
		_, err := definition.Parse("f.toml", []byte(tc.doc))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\nerror %v\nwant  %s", tc.doc, err, tc.want)
		}
	}
}

// The exported limits are the declared ones.
func TestDeclaredLimits(t *testing.T) {
	doc := func(n int) []byte {
		return []byte(fmt.Sprintf("type = \"sink\"\nkey = \"k\"\npath = \"p\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = %d\n", n))
	}
	if d, err := definition.Parse("f.toml", doc(definition.MaxBatchLength)); err != nil || d.Topics[0].BatchLength != definition.MaxBatchLength {
		t.Errorf("batch_length = MaxBatchLength: %v", err)
	}
	want := fmt.Sprintf("out of range [1, %d]", definition.MaxBatchLength)
	if _, err := definition.Parse("f.toml", doc(definition.MaxBatchLength+1)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("batch_length = MaxBatchLength+1: %v, want %q", err, want)
	}
}

// max_in_flight_per_partition defaults to 1 (a partition's batches one at
// a time) and takes 1 to MaxInFlightPerPartition, never more than the
// block's max_in_flight; anything else is refused naming why.
func TestMaxInFlightPerPartition(t *testing.T) {
	doc := func(lines string) []byte {
		return []byte("type = \"sink\"\nkey = \"k\"\npath = \"p\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n" + lines)
	}
	if d, err := definition.Parse("f.toml", doc("max_in_flight = 8\n")); err != nil || d.Topics[0].MaxInFlightPerPartition != 1 {
		t.Fatalf("default: %v %+v", err, d)
	}
	for _, c := range []struct{ all, per int }{{1, 1}, {4, 4}, {64, 2}, {64, definition.MaxInFlightPerPartition}} {
		d, err := definition.Parse("f.toml", doc(fmt.Sprintf("max_in_flight = %d\nmax_in_flight_per_partition = %d\n", c.all, c.per)))
		if err != nil || d.Topics[0].MaxInFlightPerPartition != c.per {
			t.Errorf("max_in_flight = %d, max_in_flight_per_partition = %d: %v", c.all, c.per, err)
		}
	}
	want := fmt.Sprintf("out of range [1, %d]", definition.MaxInFlightPerPartition)
	for _, v := range []string{"0", "-1", fmt.Sprint(definition.MaxInFlightPerPartition + 1)} {
		_, err := definition.Parse("f.toml", doc("max_in_flight = 64\nmax_in_flight_per_partition = "+v+"\n"))
		if err == nil || !strings.Contains(err.Error(), "topics[1].max_in_flight_per_partition: "+v+" "+want) {
			t.Errorf("max_in_flight_per_partition = %s: %v, want %q", v, err, want)
		}
	}
	for _, lines := range []string{"max_in_flight_per_partition = 2\n", "max_in_flight = 3\nmax_in_flight_per_partition = 4\n"} {
		_, err := definition.Parse("f.toml", doc(lines))
		if err == nil || !strings.Contains(err.Error(), "topics[1].max_in_flight_per_partition:") || !strings.Contains(err.Error(), "is above max_in_flight") {
			t.Errorf("%q: %v, want it refused as above max_in_flight", lines, err)
		}
	}
}

// max_in_flight defaults to 1 (batches one at a time, the spec's loop) and
// takes 1 to MaxInFlight; anything else is refused naming the range.
func TestMaxInFlight(t *testing.T) {
	doc := func(line string) []byte {
		return []byte("type = \"sink\"\nkey = \"k\"\npath = \"p\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n" + line)
	}
	if d, err := definition.Parse("f.toml", doc("")); err != nil || d.Topics[0].MaxInFlight != 1 {
		t.Fatalf("default: %v %+v", err, d)
	}
	for _, n := range []int{1, 8, definition.MaxInFlight} {
		if d, err := definition.Parse("f.toml", doc(fmt.Sprintf("max_in_flight = %d\n", n))); err != nil || d.Topics[0].MaxInFlight != n {
			t.Errorf("max_in_flight = %d: %v", n, err)
		}
	}
	want := fmt.Sprintf("out of range [1, %d]", definition.MaxInFlight)
	for _, v := range []string{"0", "-1", fmt.Sprint(definition.MaxInFlight + 1)} {
		if _, err := definition.Parse("f.toml", doc("max_in_flight = "+v+"\n")); err == nil || !strings.Contains(err.Error(), "topics[1].max_in_flight: "+v+" "+want) {
			t.Errorf("max_in_flight = %s: %v, want %q", v, err, want)
		}
	}
	if _, err := definition.Parse("f.toml", doc("max_in_flight = \"4\"\n")); err == nil {
		t.Error("a string max_in_flight accepted")
	}
	// The sink's batches in flight: what its library's child needs threads for.
	d, err := definition.Parse("f.toml", doc("max_in_flight = 6\n[[topics]]\ntopics = [\"b\"]\nschema = \"raw\"\n"))
	if err != nil || d.InFlight() != 7 {
		t.Errorf("InFlight() of blocks of 6 and 1: %v %v", d, err)
	}
}
