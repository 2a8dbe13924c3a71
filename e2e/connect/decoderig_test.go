package connect_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

// decodeRig is what the decode and transform tests run in: one-partition
// topics of their own on the shared Apache Kafka broker, empty Delta
// tables named after each topic's last segment in a directory of the
// test's, the Python helpers of testdata/decode (encoders independent of
// the runtime's: fastavro, the official Python protobuf runtime; the
// reader: delta-rs), and one picomq-connect running every definition
// written to defs.
type decodeRig struct {
	t      *testing.T
	kafka  services.Services
	cl     *kgo.Client
	adm    *kadm.Client
	prefix string // of the topics and groups, this run's own
	py     string // testdata/decode, absolute
	tables string // the Delta tables' directory
	defs   string
	rt     *connectProc
}

func newDecodeRig(t *testing.T) *decodeRig {
	r := &decodeRig{t: t, kafka: services.RequireKafka(t), tables: t.TempDir(), defs: t.TempDir()}
	r.prefix = "dec" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	var err error
	if r.py, err = filepath.Abs(filepath.Join("testdata", "decode")); err != nil {
		t.Fatal(err)
	}
	r.cl, err = kgo.NewClient(kgo.SeedBrokers(r.kafka.KafkaBrokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cl.Close)
	r.adm = kadm.NewClient(r.cl)
	return r
}

// in is the rig for a subtest: its failures are t's (a subtest must not
// call FailNow on its parent).
func (r *decodeRig) in(t *testing.T) *decodeRig {
	c := *r
	c.t = t
	return &c
}

// topic creates <prefix>.<suffix> (one partition) and returns its name;
// it and its dead-letter topic are deleted when the test ends.
func (r *decodeRig) topic(suffix string) string {
	name := r.prefix + "." + suffix
	if _, err := r.adm.CreateTopic(context.Background(), 1, 1, nil, name); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { r.adm.DeleteTopics(context.Background(), name, name+".dlq") })
	return name
}

// group is the consumer group of suffix's block.
func (r *decodeRig) group(suffix string) string { return r.prefix + "-" + suffix }

// table creates the empty Delta table of suffix with a pyarrow schema (a
// Python expression over pa) and returns its URI.
func (r *decodeRig) table(suffix, schema string) string {
	uri := "file://" + filepath.Join(r.tables, suffix)
	pyenv.Run(r.t, `
import sys
import pyarrow as pa
from deltalake import write_deltalake
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=pa.schema(`+schema+`)))
`, uri)
	return uri
}

// python runs the helper script name of testdata/decode with args after
// the directory (every script takes it first) and decodes its JSON output
// into v.
func (r *decodeRig) python(v any, name string, args ...string) {
	r.t.Helper()
	script, err := os.ReadFile(filepath.Join(r.py, name))
	if err != nil {
		r.t.Fatal(err)
	}
	out := pyenv.Run(r.t, string(script), append([]string{r.py}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		r.t.Fatalf("%s: %v: %s", name, err, out)
	}
}

// records are kgo records of base64 values, as the Python encoders print
// them.
func records(t *testing.T, b64 []string) []*kgo.Record {
	t.Helper()
	recs := make([]*kgo.Record, len(b64))
	for i, s := range b64 {
		v, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = &kgo.Record{Value: v}
	}
	return recs
}

// produce writes recs, already encoded (plain Avro or protobuf here; the
// Confluent wire format of a registry's serializer as well), to topic in
// order, so that recs[i] is at offset i of an empty topic.
func (r *decodeRig) produce(topic string, recs ...*kgo.Record) {
	r.t.Helper()
	for _, rec := range recs {
		rec.Topic = topic
	}
	if err := r.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		r.t.Fatal(err)
	}
}

// writeDef writes a definition file into the rig's directory.
func (r *decodeRig) writeDef(name, text string) { writeDef(r.t, filepath.Join(r.defs, name), text) }

// start starts picomq-connect on every definition written, with its HTTP
// endpoint on a free port.
func (r *decodeRig) start() {
	r.rt = &connectProc{t: r.t, bin: buildConnect(r.t), host: hosttest.BuildHost(r.t), plugins: distDir(r.t),
		brokers: strings.Join(r.kafka.KafkaBrokers, ","), defs: r.defs,
		log: filepath.Join(r.t.TempDir(), "connect.log"), args: []string{"--http", "127.0.0.1:0"}}
	r.t.Cleanup(r.rt.kill)
	r.rt.start()
}

// waitAtEnd waits until each group's committed offset of its topic (one
// partition) is the topic's end offset.
func (r *decodeRig) waitAtEnd(groupTopics map[string]string) {
	r.t.Helper()
	for group, topic := range groupTopics {
		waitTopicAtEnd(r.t, r.adm, group, topic, 90*time.Second, r.rt)
	}
}

// committed is group's committed offset of topic's partition 0, -1 for
// none.
func (r *decodeRig) committed(group, topic string) int64 {
	r.t.Helper()
	return committedOffset(r.t, r.adm, group, topic)
}

// waitLog waits until the runtime's log has a line matching re, and
// returns its submatches.
func (r *decodeRig) waitLog(re *regexp.Regexp) []string {
	r.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(r.rt.log)
		if m := re.FindStringSubmatch(string(b)); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no log line matching %s in 60 s\n%s", re, r.rt.tail())
		}
	}
}

// metric is the value of the /metrics sample of name whose labels include
// every one of labels (`topic="x"`), 0 when there is none.
func (r *decodeRig) metric(name string, labels ...string) float64 {
	r.t.Helper()
	addr := r.waitLog(regexp.MustCompile(`event=http_listening addr=(\S+)`))[1]
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sc := bufio.NewScanner(strings.NewReader(string(body)))
lines:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue lines
			}
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			r.t.Fatalf("/metrics line %q: %v", line, err)
		}
		return v
	}
	return 0
}

// readDelta returns the rows of suffix's table as delta-rs reads them, in
// canonical form (testdata/decode/canon.py), ordered by the column by.
func (r *decodeRig) readDelta(suffix, by string) []string {
	r.t.Helper()
	var rows []string
	r.python(&rows, "read_delta.py", "file://"+filepath.Join(r.tables, suffix), by)
	return rows
}

// checkRows compares rows read back with the rows wanted, both canonical
// JSON (canon.py's form, or written by hand in it): numbers compare by
// their digits, objects whatever their key order.
func checkRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d\ngot:  %s\nwant: %s", what, len(got), len(want), strings.Join(got, "\n      "), strings.Join(want, "\n      "))
		return
	}
	for i := range got {
		g, w := decodeNumbers(t, got[i]), decodeNumbers(t, want[i])
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: row %d\ngot:  %s\nwant: %s", what, i, got[i], want[i])
		}
	}
}

func decodeNumbers(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// deadLetters reads n records from topic's dead-letter topic from its
// start, and then makes sure there is no other.
func (r *decodeRig) deadLetters(topic string, n int) []*kgo.Record {
	r.t.Helper()
	return readDeadLetters(r.t, r.kafka.KafkaBrokers, topic, n)
}

// headers maps a record's headers by key (the last of each).
func headers(rec *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, kv := range rec.Headers {
		h[kv.Key] = string(kv.Value)
	}
	return h
}

// idRange is from, from+1, …, to-1.
func idRange(from, to int64) []int64 {
	var ids []int64
	for i := from; i < to; i++ {
		ids = append(ids, i)
	}
	return ids
}

// rowIDs are the id fields of canonical rows.
func rowIDs(t *testing.T, rows []string) []int64 {
	t.Helper()
	var ids []int64
	for _, row := range rows {
		var r struct{ ID int64 }
		if err := json.Unmarshal([]byte(row), &r); err != nil {
			t.Fatalf("%v: %s", err, row)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// block is a [[topics]] block of one topic consumed in group, with body
// (the schema, tolerance, batch and transforms keys) after.
func (r *decodeRig) block(topic, group, body string) string {
	return fmt.Sprintf(`[[topics]]
topics = [%q]
consumer_group = %q
poll_interval = "100ms"
%s
`, topic, group, body)
}
