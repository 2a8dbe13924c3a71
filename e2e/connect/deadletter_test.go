package connect_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// With errors_tolerance = "all", picomq-connect against a real Apache Kafka
// broker writes the good records of each batch to the Delta table and
// produces exactly the bad ones to <topic>.dlq — the ones the Delta sink
// rejects (a decimal that would need rounding) and the ones the runtime
// cannot decode (not JSON) — with their key, value and headers and the
// pico_* headers saying where they came from and why; the group's offset
// reaches the end offset. The broker creates no topic by itself
// (auto.create.topics.enable=false): the runtime creates <topic>.dlq
// before it consumes.
func TestDeadLettersOnRealBroker(t *testing.T) {
	kafka := services.RequireKafka(t)
	run := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	topic, group := "dlq"+run+".orders", "dlq"+run+"-delta"
	dlq := topic + ".dlq"

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.KafkaBrokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), topic, dlq) })

	table := "file://" + filepath.Join(t.TempDir(), "orders")
	pyenv.Run(t, `
import sys, decimal, pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([("id", pa.int64()), ("amount", pa.decimal128(10, 2))])
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=schema))
`, table)

	// 120 records: every 17th has an amount that would need rounding (the
	// sink rejects it, class value), every 23rd is not JSON (class encoding:
	// the Delta library declares payload_checks ["json"], so the runtime
	// leaves the check to it and the message is the sink's); one bad record
	// carries a key and a header that must reach the dead-letter topic
	// unchanged.
	const n = 120
	var recs []*kgo.Record
	var good []int64
	bad := map[int64]string{} // offset → class
	for id := range int64(n) {
		r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id":%d,"amount":"%d.25"}`, id, id)}
		switch {
		case id%23 == 7:
			r.Value = fmt.Appendf(nil, `{"id":%d,`, id)
			bad[id] = "encoding"
		case id%17 == 5:
			r.Value = fmt.Appendf(nil, `{"id":%d,"amount":"1.234"}`, id)
			r.Key = []byte("k" + strconv.FormatInt(id, 10))
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("t" + strconv.FormatInt(id, 10))}}
			bad[id] = "value"
		default:
			good = append(good, id)
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	defs := t.TempDir()
	writeDef(t, filepath.Join(defs, "delta.toml"), fmt.Sprintf(`type = "sink"
key = "dlq_delta"
path = "libpicomq_connector_delta_sink"

[[topics]]
topics = [%q]
schema = "json"
batch_length = 50
poll_interval = "100ms"
consumer_group = %q
errors_tolerance = "all"

[plugin_config]
table_uri = %q
`, topic, group, table))
	rt := startConnect(t, kafka.KafkaBrokers, defs)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	waitGroupAtEnds(t, adm, group, ends, 90*time.Second, rt)
	if code := rt.stop(); code != 0 || rt.selfExits != 0 {
		t.Fatalf("picomq-connect exit code %d, %d exits by itself\n%s", code, rt.selfExits, rt.tail())
	}
	if log, _ := os.ReadFile(rt.log); !strings.Contains(string(log), "dead_letter_topic_created") || !strings.Contains(string(log), "dead_letter_topic="+dlq) {
		t.Errorf("no dead_letter_topic_created line for %s:\n%s", dlq, log)
	}

	if ids := readIDs(t, table); !slices.Equal(ids, good) {
		t.Errorf("table ids %v, want the %d good ones %v", head(ids), len(good), head(good))
	}

	// The dead-letter topic, read from its start by a plain consumer.
	dc, err := kgo.NewClient(kgo.SeedBrokers(kafka.KafkaBrokers...), kgo.ConsumeTopics(dlq),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	var got []*kgo.Record
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for len(got) < len(bad) && dctx.Err() == nil {
		dc.PollFetches(dctx).EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	// Anything beyond the bad records would have arrived with them: one
	// more short poll shows there is nothing else.
	more, cancelMore := context.WithTimeout(ctx, time.Second)
	dc.PollFetches(more).EachRecord(func(r *kgo.Record) { got = append(got, r) })
	cancelMore()
	if len(got) != len(bad) {
		t.Fatalf("%d records in %s, want %d", len(got), dlq, len(bad))
	}
	seen := map[int64]bool{}
	for _, r := range got {
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		off, err := strconv.ParseInt(h[metadata.DeadLetterOffset], 10, 64)
		if err != nil || seen[off] {
			t.Errorf("dead letter with source offset %q (duplicate: %v)", h[metadata.DeadLetterOffset], seen[off])
			continue
		}
		seen[off] = true
		src := recs[off] // produced in offset order into an empty one-partition topic
		class, ok := bad[off]
		switch {
		case !ok:
			t.Errorf("offset %d was dead-lettered but is a good record", off)
		case h[metadata.DeadLetterClass] != class:
			t.Errorf("offset %d: class %q, want %q (%s)", off, h[metadata.DeadLetterClass], class, h[metadata.DeadLetterMessage])
		case class == "encoding" && !strings.HasPrefix(h[metadata.DeadLetterMessage], "Invalid JSON record: "):
			t.Errorf("offset %d: message %q is not the sink's", off, h[metadata.DeadLetterMessage])
		case string(r.Value) != string(src.Value) || string(r.Key) != string(src.Key):
			t.Errorf("offset %d: key/value %q/%q, want %q/%q", off, r.Key, r.Value, src.Key, src.Value)
		case h[metadata.DeadLetterTopic] != topic || h[metadata.DeadLetterPartition] != "0" || h[metadata.DeadLetterMessage] == "":
			t.Errorf("offset %d: headers %v", off, h)
		case len(src.Headers) > 0 && h["trace"] != string(src.Headers[0].Value):
			t.Errorf("offset %d: original header trace=%q lost (%v)", off, src.Headers[0].Value, h)
		}
	}
}
