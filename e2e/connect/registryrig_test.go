package connect_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

// regRig is the setting of TestSchemaRegistryOnRealBroker: the real Kafka
// broker and Schema Registry, one-partition topics and Delta tables of its
// own, and one picomq-connect running every sink written with sink.
type regRig struct {
	t        *testing.T
	registry string // the registry's Confluent API base URL
	brokers  []string
	cl       *kgo.Client
	adm      *kadm.Client
	prefix   string
	defs     string
	tables   string
	scripts  string // testdata/registry
	rt       *connectProc
}

func newRegRig(t *testing.T) *regRig {
	t.Helper()
	kafka := services.RequireKafka(t)
	reg := services.RequireSchemaRegistry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.KafkaBrokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return &regRig{t: t, registry: reg.SchemaRegistryURL, brokers: kafka.KafkaBrokers, cl: cl, adm: kadm.NewClient(cl),
		prefix: "reg" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36), defs: t.TempDir(), tables: t.TempDir(),
		scripts: filepath.Join(root, "e2e", "connect", "testdata", "registry")}
}

// topic creates the one-partition topic <prefix>.<name> (and deletes it and
// its dead-letter topic when the test ends).
func (r *regRig) topic(name string) string {
	r.t.Helper()
	topic := r.prefix + "." + name
	if _, err := r.adm.CreateTopic(context.Background(), 1, 1, nil, topic); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { r.adm.DeleteTopics(context.Background(), topic, topic+".dlq") })
	return topic
}

// table creates an empty Delta table of the pyarrow schema fields (a
// Python list of fields) with delta-rs and returns its URI.
func (r *regRig) table(name, fields string) string {
	r.t.Helper()
	uri := "file://" + filepath.Join(r.tables, name)
	pyenv.Run(r.t, `
import sys, pyarrow as pa
from deltalake import write_deltalake
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=pa.schema(`+fields+`)))
`, uri)
	return uri
}

// sink writes the definition of a Delta sink named name consuming topic
// into uri, its [[topics]] block's keys given in block, its plugin_config's
// extra keys in plugin. It returns the consumer group.
func (r *regRig) sink(name, topic, uri, block, plugin string) string {
	group := r.prefix + "-" + name
	writeDef(r.t, filepath.Join(r.defs, name+".toml"), fmt.Sprintf(`type = "sink"
key = %q
path = "libpicomq_connector_delta_sink"

[[topics]]
topics = [%q]
consumer_group = %q
batch_length = 100
poll_interval = "100ms"
%s

[plugin_config]
table_uri = %q
%s
`, r.prefix+"_"+name, topic, group, block, uri, plugin))
	return group
}

// redshiftSink writes a Redshift sink (the emulator in front of a database
// of the test's) with one [[topics]] block per topic, its keys in
// blocks[topic]; topic <prefix>.<name> lands in table reg_<name>, the
// payload as text: the JSON the runtime decoded, as the plugin got it. It
// returns the database and each topic's group.
func (r *regRig) redshiftSink(blocks map[string]string) (services.Database, map[string]string) {
	r.t.Helper()
	svc := services.Require(r.t)
	db := svc.NewDatabase(r.t)
	emu := rsemu.NewTest(r.t, rsemu.Config{BackendDSN: db.DSN, S3Endpoint: svc.S3Endpoint,
		S3AccessKey: svc.S3AccessKey, S3SecretKey: svc.S3SecretKey, S3Region: svc.S3Region})
	groups := map[string]string{}
	var def strings.Builder
	fmt.Fprintf(&def, "type = \"sink\"\nkey = %q\npath = \"libpicomq_connector_redshift_sink\"\n", r.prefix+"_redshift")
	for topic, block := range blocks {
		groups[topic] = r.prefix + "-redshift-" + topic[strings.LastIndexByte(topic, '.')+1:]
		fmt.Fprintf(&def, "\n[[topics]]\ntopics = [%q]\nconsumer_group = %q\nbatch_length = 100\npoll_interval = \"100ms\"\n%s\n",
			topic, groups[topic], block)
	}
	def.WriteString(redshiftPluginConfig(svc, emu.DSN(db.Name), svc.NewBucket(r.t), "reg_{topic_segment[-1]}"))
	def.WriteString("retry_delay = \"200ms\"\n")
	writeDef(r.t, filepath.Join(r.defs, "redshift.toml"), def.String())
	return db, groups
}

// redshiftPayloads reads the payloads of table from the database behind
// the emulator with SQL, ordered by their id.
func (r *regRig) redshiftPayloads(db services.Database, table string) []json.RawMessage {
	r.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		r.t.Fatal(err)
	}
	defer conn.Close(ctx)
	q, err := conn.Query(ctx, `SELECT payload FROM `+pgx.Identifier{table}.Sanitize()+` ORDER BY (payload::json->>'id')::bigint`)
	if err != nil {
		r.t.Fatal(err)
	}
	rows, err := pgx.CollectRows(q, pgx.RowTo[string])
	if err != nil {
		r.t.Fatal(err)
	}
	out := make([]json.RawMessage, len(rows))
	for i, row := range rows {
		out[i] = json.RawMessage(row)
	}
	return out
}

// serialize runs testdata/registry/serialize.py (Confluent's Python
// serializers) and returns the payloads it made.
func (r *regRig) serialize(args ...string) [][]byte {
	r.t.Helper()
	script, err := os.ReadFile(filepath.Join(r.scripts, "serialize.py"))
	if err != nil {
		r.t.Fatal(err)
	}
	var b64 []string
	out := pyenv.Run(r.t, "__file__ = "+strconv.Quote(filepath.Join(r.scripts, "serialize.py"))+"\n"+string(script), args...)
	if err := json.Unmarshal([]byte(out), &b64); err != nil {
		r.t.Fatalf("serialize.py %s: %v: %s", args[0], err, out)
	}
	payloads := make([][]byte, len(b64))
	for i, s := range b64 {
		if payloads[i], err = base64.StdEncoding.DecodeString(s); err != nil {
			r.t.Fatal(err)
		}
	}
	return payloads
}

// produce produces values to topic in order (offsets 0, 1, ... in a new
// topic).
func (r *regRig) produce(topic string, values ...[]byte) {
	r.t.Helper()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Value: v}
	}
	if err := r.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		r.t.Fatal(err)
	}
}

// start starts picomq-connect on every definition written.
func (r *regRig) start() { r.rt = startConnect(r.t, r.brokers, r.defs) }

// waitAtEnd waits until group's committed offset of topic is its end.
func (r *regRig) waitAtEnd(group, topic string) {
	r.t.Helper()
	waitTopicAtEnd(r.t, r.adm, group, topic, 60*time.Second, r.rt)
}

// committed is group's committed offset of topic, -1 for none.
func (r *regRig) committed(group, topic string) int64 {
	r.t.Helper()
	return committedOffset(r.t, r.adm, group, topic)
}

// endOffset is topic's end offset, 0 when it does not exist.
func (r *regRig) endOffset(topic string) int64 {
	ends, err := r.adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		r.t.Fatal(err)
	}
	if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
		return o.Offset
	}
	return 0
}

// waitLog waits until the runtime's log has at least n lines matching re
// and returns them.
func (r *regRig) waitLog(re *regexp.Regexp, n int) []string {
	r.t.Helper()
	for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(r.rt.log)
		var got []string
		for _, line := range strings.Split(string(b), "\n") {
			if re.MatchString(line) {
				got = append(got, line)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d log lines matching %s in 45 s, want %d\n%s", len(got), re, n, r.rt.tail())
		}
	}
}

// read returns the rows of each table as delta-rs reads them
// (testdata/registry/read_delta.py), ordered by id.
func (r *regRig) read(uris ...string) map[string][]json.RawMessage {
	r.t.Helper()
	script, err := os.ReadFile(filepath.Join(r.scripts, "read_delta.py"))
	if err != nil {
		r.t.Fatal(err)
	}
	var out map[string][]json.RawMessage
	if s := pyenv.Run(r.t, string(script), uris...); json.Unmarshal([]byte(s), &out) != nil {
		r.t.Fatalf("read_delta.py printed %q", s)
	}
	return out
}

// deadLetters reads topic's dead-letter topic from its start: n records,
// and a short poll more to show there are no others.
func (r *regRig) deadLetters(topic string, n int) []*kgo.Record {
	r.t.Helper()
	return readDeadLetters(r.t, r.brokers, topic, n)
}

// regCheckRows compares the rows read back with the rows wanted, written
// by hand as JSON: as values (key order and number spelling aside, every
// digit of an integer compared).
func regCheckRows(t *testing.T, what string, got []json.RawMessage, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d:\n%s", what, len(got), len(want), regJoinRaw(got))
		return
	}
	for i := range want {
		g, w := regValue(t, string(got[i])), regValue(t, want[i])
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: row %d\n got %s\nwant %s", what, i, got[i], want[i])
		}
	}
}

func regJoinRaw(rows []json.RawMessage) string {
	var b strings.Builder
	for _, r := range rows {
		b.Write(r)
		b.WriteByte('\n')
	}
	return b.String()
}

// regValue parses JSON with integers kept whole (every digit) and other
// numbers as float64, an integral one below 2^53 as the integer.
func regValue(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	var norm func(any) any
	norm = func(v any) any {
		switch v := v.(type) {
		case json.Number:
			if i, err := v.Int64(); err == nil {
				return i
			}
			f, err := v.Float64()
			if err != nil {
				t.Fatalf("%v in %s", err, s)
			}
			if f == math.Trunc(f) && math.Abs(f) < 1<<53 { // 0.0 is 0
				return int64(f)
			}
			return f
		case map[string]any:
			for k, x := range v {
				v[k] = norm(x)
			}
		case []any:
			for i, x := range v {
				v[i] = norm(x)
			}
		}
		return v
	}
	return norm(v)
}

// switchProxy is a reverse proxy in front of the real registry that the
// test switches between forwarding, answering 503, closing the connection,
// and stalling (holding each request until the client gives up): an
// outage without touching the shared registry.
type switchProxy struct {
	url  string // the proxy's Confluent API base URL
	mode atomic.Int32
	hits atomic.Int64
}

const (
	proxyUnavailable = iota // 503
	proxyDrop               // the connection closed without an answer
	proxyStall
	proxyForward
)

func newSwitchProxy(t *testing.T, registry string) *switchProxy {
	t.Helper()
	target, err := url.Parse(registry)
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{}
	fwd := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = target.Scheme, target.Host, target.Host
	}}
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p.hits.Add(1)
		switch p.mode.Load() {
		case proxyUnavailable:
			http.Error(w, "registry unavailable (test proxy)", http.StatusServiceUnavailable)
		case proxyDrop:
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
		case proxyStall:
			select { // bounded: the client's schema_registry_timeout ends it first
			case <-req.Context().Done():
			case <-stop:
			case <-time.After(time.Minute):
			}
		default:
			fwd.ServeHTTP(w, req)
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	p.url = srv.URL + target.Path
	return p
}
