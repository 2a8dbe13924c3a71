package redrive_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/connect/redrive"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// txnSink is a plugin that dedupes as the Delta sink does: per txn id the
// last offset written, a redrive batch under its dead-letter partition's
// id and offsets. It rejects payloads holding "bad" until fixed, and
// counts every write of each original coordinate.
type txnSink struct {
	mu       sync.Mutex
	fixed    bool
	txn      map[string]uint64
	written  map[string]int  // "topic/partition@offset" -> writes
	rejected map[string]bool // "dlq/partition@dlq offset" rejected by the write that covered it
	batches  []hostclient.Batch
}

func (s *txnSink) ChecksPayloads(string) bool { return false }

func (s *txnSink) Consume(_ context.Context, b hostclient.Batch) ([]hostclient.Rejection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, b)
	if b.Redrive == nil {
		return nil, fmt.Errorf("not a redrive batch")
	}
	for _, r := range b.Records {
		if !s.fixed && bytes.Contains(r.Payload, []byte("boom")) {
			return nil, &hostclient.StatusError{Op: "consume", Code: hostclient.StatusFatal, Message: "boom"}
		}
	}
	id := b.Redrive.Topic + "/" + strconv.Itoa(int(b.Redrive.Partition))
	done, had := s.txn[id]
	var rej []hostclient.Rejection
	for i, r := range b.Records {
		seq := b.Redrive.Offsets[i]
		key := id + "@" + strconv.FormatUint(seq, 10)
		if had && seq <= done {
			// A replay reports the rejections of the delivery that
			// wrote the batch again (ABI 1.1), as the Delta sink does.
			if s.rejected[key] {
				rej = append(rej, hostclient.Rejection{Index: i, Reason: hostclient.RejectValue, Message: "rejected before"})
			}
			continue
		}
		if !s.fixed && bytes.Contains(r.Payload, []byte("bad")) {
			s.rejected[key] = true
			rej = append(rej, hostclient.Rejection{Index: i, Reason: hostclient.RejectValue, Message: "still bad"})
			continue
		}
		s.written[fmt.Sprintf("%s/%d@%d", b.Topic, b.Partition, r.Offset)]++
	}
	if last := b.Redrive.Offsets[len(b.Records)-1]; !had || last > done {
		s.txn[id] = last // a batch the table had commits nothing
	}
	return rej, nil
}

// Dead letters of two source partitions interleaved in one dead-letter
// partition, put back four times through kfake: records are written once,
// records still bad go back with pico_redrive_attempts 1, 2, and once
// fixed are written once; a duplicate letter and a foreign one are never
// delivered; the last run changes nothing.
func TestRunTwiceAndAfterAFix(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "o.dlq"), kfake.SeedTopics(2, "o"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	brokers := kf.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("o.dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var letters []*kgo.Record
	for i := range 20 {
		src := &kgo.Record{Topic: "o", Partition: int32(i % 2), Offset: int64(100 + i), Timestamp: time.UnixMilli(1700000000000),
			Value: fmt.Appendf(nil, `{"id":%d}`, i), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t")}}}
		if i%5 == 0 {
			src.Value = fmt.Appendf(nil, `{"id":%d,"bad":1}`, i)
		}
		letters = append(letters, pipeline.DeadLetterRecord(src, "o.dlq", hostclient.RejectValue, "first"))
		if i == 7 { // produced twice after a failure
			letters = append(letters, pipeline.DeadLetterRecord(src, "o.dlq", hostclient.RejectValue, "first"))
		}
	}
	foreign := &kgo.Record{Topic: "other", Value: []byte(`{}`)}
	letters = append(letters, pipeline.DeadLetterRecord(foreign, "o.dlq", hostclient.RejectValue, "x"))
	if err := cl.ProduceSync(context.Background(), letters...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "d.toml")
	if err := os.WriteFile(path, []byte(`type = "sink"
key = "k"
path = "libx"

[[topics]]
topics = ["o"]
schema = "json"
batch_length = 3
errors_tolerance = "all"

[plugin_config]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	defs, err := definition.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sink := &txnSink{txn: map[string]uint64{}, written: map[string]int{}, rejected: map[string]bool{}}
	cfg := redrive.Config{Def: defs[0], Brokers: brokers, Out: sink, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	attempts := func() map[string]int { // pico_redrive_attempts -> letters
		got := map[string]int{}
		for _, l := range readTopic(t, brokers, "o.dlq") {
			for _, h := range l.Headers {
				if h.Key == metadata.RedriveAttempts {
					got[string(h.Value)]++
				}
			}
		}
		return got
	}
	for run := 1; run <= 4; run++ {
		if run == 3 {
			sink.fixed = true
		}
		rep, err := redrive.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := rep.Write(&out); err != nil {
			t.Fatal(err)
		}
		t.Logf("run %d:\n%s", run, out.String())
		if !rep.OK() {
			t.Fatalf("run %d: report not OK", run)
		}
		tl := rep.Parts[redrive.Part{Topic: "o.dlq"}]
		if tl.Foreign != 1 || tl.Duplicates != 1 {
			t.Errorf("run %d: foreign %d, duplicates %d, want 1 and 1", run, tl.Foreign, tl.Duplicates)
		}
		wantAttempts := map[int]map[string]int{1: {"1": 4}, 2: {"1": 4, "2": 4}, 3: {"1": 4, "2": 4}, 4: {"1": 4, "2": 4}}[run]
		if got := attempts(); fmt.Sprint(got) != fmt.Sprint(wantAttempts) {
			t.Errorf("run %d: letters by attempts %v, want %v", run, got, wantAttempts)
		}
		want := 16
		if run >= 3 {
			want = 20
		}
		if len(sink.written) != want {
			t.Errorf("run %d: %d records written, want %d", run, len(sink.written), want)
		}
		for k, n := range sink.written {
			if n != 1 {
				t.Errorf("run %d: %s written %d times", run, k, n)
			}
		}
	}
	// Every batch is one source partition, in dead-letter order.
	for _, b := range sink.batches {
		for i := 1; i < len(b.Records); i++ {
			if b.Redrive.Offsets[i] <= b.Redrive.Offsets[i-1] {
				t.Fatalf("batch with dead-letter offsets %v", b.Redrive.Offsets)
			}
		}
		for _, r := range b.Records {
			if (r.Offset-100)%2 != uint64(b.Partition) {
				t.Fatalf("record at original offset %d in a batch of partition %d", r.Offset, b.Partition)
			}
			if len(r.Headers) != 1 || r.Headers[0].Key != "trace" {
				t.Fatalf("headers %v: want the record's own only", r.Headers)
			}
		}
	}
}

func readTopic(t *testing.T, brokers []string, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r); n++ })
		if n == 0 {
			return out
		}
	}
}

// A batch that fails stops its dead-letter partition: the batches after it
// are not delivered (a sink deduping on dead-letter offsets would skip the
// failed one's records later), the report is not OK and names the error.
// After the fix the next run delivers everything, each record once.
func TestFailedBatchStopsItsPartition(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "o.dlq"), kfake.SeedTopics(1, "o"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	brokers := kf.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var letters []*kgo.Record
	for i := range 9 {
		src := &kgo.Record{Topic: "o", Offset: int64(i), Timestamp: time.UnixMilli(1700000000000), Value: fmt.Appendf(nil, `{"id":%d}`, i)}
		if i == 4 {
			src.Value = []byte(`{"id":4,"boom":1}`)
		}
		letters = append(letters, pipeline.DeadLetterRecord(src, "o.dlq", hostclient.RejectValue, "first"))
	}
	if err := cl.ProduceSync(context.Background(), letters...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "d.toml")
	if err := os.WriteFile(path, []byte("type = \"sink\"\nkey = \"k\"\npath = \"libx\"\n\n[[topics]]\ntopics = [\"o\"]\nschema = \"json\"\nbatch_length = 3\nerrors_tolerance = \"all\"\n\n[plugin_config]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	defs, err := definition.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sink := &txnSink{txn: map[string]uint64{}, written: map[string]int{}, rejected: map[string]bool{}}
	cfg := redrive.Config{Def: defs[0], Brokers: brokers, Out: sink, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	rep, err := redrive.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tl := rep.Parts[redrive.Part{Topic: "o.dlq"}]
	if rep.OK() || tl.Delivered != 3 || tl.NotDone != 6 || tl.Err == nil || len(sink.written) != 3 {
		t.Fatalf("after a failed batch: ok %v, delivered %d, not done %d, err %v, written %d; want not OK, 3, 6, an error, 3",
			rep.OK(), tl.Delivered, tl.NotDone, tl.Err, len(sink.written))
	}
	sink.fixed = true
	if rep, err = redrive.Run(context.Background(), cfg); err != nil || !rep.OK() {
		t.Fatalf("after the fix: ok %v, %v", rep.OK(), err)
	}
	if len(sink.written) != 9 {
		t.Fatalf("%d records written, want 9", len(sink.written))
	}
	for k, n := range sink.written {
		if n != 1 {
			t.Errorf("%s written %d times", k, n)
		}
	}
}

// failProduce makes kfake answer every Produce request with a
// non-retriable error while on is set.
func failProduce(kf *kfake.Cluster, on *atomic.Bool) {
	kf.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		if !on.Load() {
			return nil, nil, false
		}
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.InvalidRecord.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}

// A letter a transform still fails on is dead-lettered again before the
// plugin sees its batch: when that produce fails, nothing is delivered (the
// plugin would commit the batch under dead-letter offsets covering the
// letter, and a later run would skip it), so the run after the fix writes
// every record.
func TestRuntimeRejectProducedBeforeDelivery(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "o.dlq"), kfake.SeedTopics(1, "o"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	brokers := kf.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var letters []*kgo.Record
	for i, v := range []string{`{"after":{"id":0}}`, `{"before":{"id":1}}`, `{"after":{"id":2}}`} {
		src := &kgo.Record{Topic: "o", Offset: int64(i), Timestamp: time.UnixMilli(1700000000000), Value: []byte(v)}
		letters = append(letters, pipeline.DeadLetterRecord(src, "o.dlq", hostclient.RejectValue, "first"))
	}
	if err := cl.ProduceSync(context.Background(), letters...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	def := func(transforms string) *definition.Definition {
		path := filepath.Join(t.TempDir(), "d.toml")
		if err := os.WriteFile(path, []byte("type = \"sink\"\nkey = \"k\"\npath = \"libx\"\n\n[[topics]]\ntopics = [\"o\"]\nschema = \"json\"\nbatch_length = 3\nerrors_tolerance = \"all\"\n"+transforms+"\n[plugin_config]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		defs, err := definition.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return defs[0]
	}
	var failing atomic.Bool
	failing.Store(true)
	failProduce(kf, &failing)
	sink := &txnSink{txn: map[string]uint64{}, written: map[string]int{}, rejected: map[string]bool{}}
	cfg := redrive.Config{Def: def("[[topics.transforms]]\ntype = \"unwrap_envelope\"\nfield = \"after\"\n"), Brokers: brokers, Out: sink,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	rep, err := redrive.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tl := rep.Parts[redrive.Part{Topic: "o.dlq"}]
	if rep.OK() || tl.Err == nil || tl.NotDone != 3 || tl.Delivered != 0 || len(sink.batches) != 0 {
		t.Fatalf("run 1 with the dead-letter produce failing: ok %v, err %v, not done %d, delivered %d, batches %d; want not OK, an error, 3, 0, 0",
			rep.OK(), tl.Err, tl.NotDone, tl.Delivered, len(sink.batches))
	}
	failing.Store(false)
	cfg.Def = def("") // the fix: no transform that fails
	if rep, err = redrive.Run(context.Background(), cfg); err != nil || !rep.OK() {
		t.Fatalf("run 2: ok %v, %v", rep.OK(), err)
	}
	for i := range 3 {
		if k := fmt.Sprintf("o/0@%d", i); sink.written[k] != 1 {
			t.Errorf("%s written %d times, want 1", k, sink.written[k])
		}
	}
}
