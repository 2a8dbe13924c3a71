package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
)

func distDir(t *testing.T) string {
	t.Helper()
	return filepath.Dir(testenv.Library(t, "libpicomq_connector_delta_sink.so"))
}

const group = "picomq-connect-sink-orders_delta"

// run runs the definition until stop is called.
func run(t *testing.T, kf *kfake.Cluster, def *definition.Definition) (proc *child.Process, stop func() error) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	proc = child.New(hosttest.BuildHost(t), def.LibraryPath(distDir(t)), child.Options{Logger: log, Stderr: os.Stderr})
	js, err := def.OpenConfig()
	if err != nil {
		t.Fatal(err)
	}
	inst, err := proc.Open(context.Background(), string(js), log)
	if err != nil {
		t.Fatal(err)
	}
	sink := pipeline.New(def, inst, pipeline.Config{Brokers: kf.ListenAddrs(), Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sink.Run(ctx) }()
	var stopped bool
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		err := <-done
		return errorsJoin(err, inst.Close(), proc.Close())
	}
	t.Cleanup(func() { stop() })
	return proc, stop
}

func errorsJoin(errs ...error) error {
	var msgs []string
	for _, e := range errs {
		if e != nil {
			msgs = append(msgs, e.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// fakeKafka is an in-process broker holding topic and a client of it,
// both closed when the test ends.
func fakeKafka(t *testing.T, topic string) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kf, cl
}

func produce(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id":%d,"customer":"c%d"}`, i, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func waitCommitted(t *testing.T, adm *kadm.Client, topic string, want int64) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := adm.FetchOffsets(context.Background(), group)
		if o, ok := resp.Lookup(topic, 0); err == nil && ok && o.At == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: offset %d never committed", topic, want)
		}
	}
}

// readIDs returns the table's id column, sorted, as delta-rs reads it.
func readIDs(t *testing.T, uri string) []int64 {
	t.Helper()
	out := pyenv.Run(t, `
import sys, json
from deltalake import DeltaTable
ids = sorted(r["id"] for r in DeltaTable(sys.argv[1]).to_pyarrow_table().to_pylist())
print(json.dumps(ids))
`, uri)
	var ids []int64
	if err := json.Unmarshal([]byte(out), &ids); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return ids
}

// Records produced to a topic land in a Delta table through the runtime
// exactly once: across a killed plugin host, a runtime restart, and a
// replay of the whole topic after the group's offset is reset to 0 (the
// Delta sink's txn skips what it wrote).
func TestDeltaFromTopicExactlyOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "orders")
	uri := "file://" + dir
	pyenv.Run(t, `
import sys
import pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([("id", pa.int64()), ("customer", pa.string())])
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=schema))
`, uri)

	kf, cl := fakeKafka(t, "orders.eu")
	adm := kadm.NewClient(cl)

	def, err := definition.Parse("orders.toml", fmt.Appendf(nil, `type = "sink"
key = "orders_delta"
name = "Orders to Delta"
path = "libpicomq_connector_delta_sink"

[[topics]]
pattern = 'orders\..*'
schema = "json"
batch_length = 20
poll_interval = "100ms"

[plugin_config]
table_uri = %q
`, uri))
	if err != nil {
		t.Fatal(err)
	}

	proc, stop := run(t, kf, def)
	produce(t, cl, "orders.eu", 0, 50)
	waitCommitted(t, adm, "orders.eu", 50)
	// Kill the plugin's host: the next batch goes to a new one.
	if err := syscall.Kill(proc.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, "orders.eu", 50, 30)
	waitCommitted(t, adm, "orders.eu", 80)
	if proc.Restarts() != 1 {
		t.Errorf("%d restarts, want 1", proc.Restarts())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Rewind the group to 0 and run again: every batch is a replay.
	if _, err := adm.CommitOffsets(context.Background(), group, kadm.OffsetsFromRecords(kgo.Record{Topic: "orders.eu", Partition: 0, Offset: -1})); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, adm, "orders.eu", 0)
	produce(t, cl, "orders.eu", 80, 10)
	_, stop = run(t, kf, def)
	waitCommitted(t, adm, "orders.eu", 90)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	ids := readIDs(t, uri)
	if len(ids) != 90 {
		t.Fatalf("%d rows, want 90: %v", len(ids), ids)
	}
	for i, id := range ids {
		if id != int64(i) {
			t.Fatalf("row %d has id %d: %v", i, id, ids)
		}
	}
}
