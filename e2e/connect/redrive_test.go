package connect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// runRedrive runs `picomq-connect redrive` on defs to its end (2 minutes
// at most) and returns its exit code and output.
func runRedrive(t *testing.T, bin string, brokers []string, defs string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "redrive", "--brokers", brokers[0], "--plugin-dir", distDir(t),
		"--host", hosttest.BuildHost(t), defs)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee) && ctx.Err() == nil:
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("picomq-connect redrive: %v\n%s", err, out.String())
	return 0, ""
}

// The test: picomq-connect writes a topic of two partitions into a
// Delta table whose region column is NOT NULL and dead-letters (into a
// dead-letter topic of two partitions, so that each interleaves both
// source partitions) the records without a region, the ones whose amount
// needs rounding, and one that is not JSON. The table is fixed with
// delta-rs (region made nullable), and redrive runs twice: every record
// without a region is in the table exactly once, with its original
// coordinates in pico_offset, read back by delta-rs; the rounding and
// non-JSON records go back to the dead-letter topic with
// pico_redrive_attempts 1 after the first run and 2 after the second,
// keeping their original pico_source_* coordinates; the source group's
// committed offsets do not move.
func TestRedriveDeltaTwiceAfterSchemaFix(t *testing.T) {
	redriveDeltaTwice(t, services.RequireKafka(t).KafkaBrokers)
}

// The same against franz-go's in-process broker (kfake), which needs no
// service: the real binaries and plugin, a broker that is not Kafka.
func TestRedriveDeltaTwiceOnKfake(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	redriveDeltaTwice(t, kf.ListenAddrs())
}

func redriveDeltaTwice(t *testing.T, brokers []string) {
	run := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	topic, group := "rd"+run+".orders", "rd"+run+"-delta"
	dlq := topic + ".dlq"
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	for _, tp := range []string{topic, dlq} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, tp); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), topic, dlq) })

	table := "file://" + filepath.Join(t.TempDir(), "orders")
	pyenv.Run(t, `
import sys, pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("amount", pa.decimal128(10, 2)),
                    pa.field("region", pa.string(), nullable=False), pa.field("pico_offset", pa.int64()),
                    pa.field("pico_partition", pa.int32())])
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=schema))
`, table)

	// 200 records over two partitions (even ids to 0, odd to 1).
	const n = 200
	var good, noRegion, stillBad []int64
	var recs []*kgo.Record
	for id := range int64(n) {
		r := &kgo.Record{Topic: topic, Partition: int32(id % 2), Value: fmt.Appendf(nil, `{"id":%d,"amount":"%d.25","region":"eu"}`, id, id)}
		switch {
		case id == 101:
			r.Value = []byte(`{"id":101,`)
			stillBad = append(stillBad, id)
		case id%11 == 3:
			r.Value = fmt.Appendf(nil, `{"id":%d,"amount":"1.234","region":"eu"}`, id)
			stillBad = append(stillBad, id)
		case id%7 == 2:
			r.Value = fmt.Appendf(nil, `{"id":%d,"amount":"%d.25"}`, id, id)
			r.Key = []byte("k" + strconv.FormatInt(id, 10))
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("t" + strconv.FormatInt(id, 10))}}
			noRegion = append(noRegion, id)
		default:
			good = append(good, id)
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Each record's original coordinates, by id.
	coords := map[int64][2]int64{}
	for i, r := range recs {
		coords[int64(i)] = [2]int64{int64(r.Partition), r.Offset}
	}

	defs := t.TempDir()
	writeDef(t, filepath.Join(defs, "delta.toml"), fmt.Sprintf(`type = "sink"
key = "rd_delta"
path = "libpicomq_connector_delta_sink"

[[topics]]
topics = [%q]
schema = "json"
batch_length = 30
poll_interval = "100ms"
consumer_group = %q
errors_tolerance = "all"

[plugin_config]
table_uri = %q
metadata_columns = true
`, topic, group, table))
	rt := startConnect(t, brokers, defs)
	waitTopicAtEnd(t, adm, group, topic, 90*time.Second, rt)
	if code := rt.stop(); code != 0 {
		t.Fatalf("picomq-connect exit code %d\n%s", code, rt.tail())
	}
	if ids := readIDs(t, table); !slices.Equal(ids, good) {
		t.Fatalf("table ids after the first run %v, want the %d good ones", head(ids), len(good))
	}
	bad := len(noRegion) + len(stillBad)
	if got := readDeadLetters(t, brokers, topic, bad); len(got) != bad {
		t.Fatalf("%d dead letters, want %d", len(got), bad)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}

	// The fix: region may be null now.
	pyenv.Run(t, `
import sys
from deltalake import DeltaTable
DeltaTable(sys.argv[1]).alter.drop_column_not_null("region")
`, table)

	want := slices.Sorted(slices.Values(append(slices.Clone(good), noRegion...)))
	for pass := 1; pass <= 2; pass++ {
		code, out := runRedrive(t, rt.bin, brokers, defs)
		if code != 0 {
			t.Fatalf("redrive %d: exit code %d\n%s", pass, code, out)
		}
		t.Logf("redrive %d:\n%s", pass, out)
		rows := readRows(t, table)
		var ids []int64
		for _, r := range rows {
			ids = append(ids, r.ID)
			c := coords[r.ID]
			if r.Partition != c[0] || r.Offset != c[1] {
				t.Errorf("redrive %d: id %d has pico_partition/pico_offset %d/%d, want its original %d/%d", pass, r.ID, r.Partition, r.Offset, c[0], c[1])
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, want) {
			t.Fatalf("redrive %d: table ids %v (%d), want each of the %d good and redriven ones once", pass, head(ids), len(ids), len(want))
		}
		// The dead-letter topic: the first run's letters, then per pass
		// one letter per record still bad, attempts = pass.
		letters := readDeadLetters(t, brokers, topic, bad+pass*len(stillBad))
		if len(letters) != bad+pass*len(stillBad) {
			t.Fatalf("redrive %d: %d dead letters, want %d", pass, len(letters), bad+pass*len(stillBad))
		}
		byAttempts := map[string][]int64{}
		for _, l := range letters {
			h := headers(l)
			off, _ := strconv.ParseInt(h[metadata.DeadLetterOffset], 10, 64)
			part, _ := strconv.ParseInt(h[metadata.DeadLetterPartition], 10, 64)
			id := int64(-1)
			for k, c := range coords {
				if c == [2]int64{part, off} {
					id = k
				}
			}
			if h[metadata.DeadLetterTopic] != topic || id < 0 {
				t.Fatalf("redrive %d: dead letter with source %s/%d@%d", pass, h[metadata.DeadLetterTopic], part, off)
			}
			if !bytes.Equal(l.Value, recs[id].Value) {
				t.Errorf("redrive %d: dead letter of id %d has value %q, want %q", pass, id, l.Value, recs[id].Value)
			}
			byAttempts[h[metadata.RedriveAttempts]] = append(byAttempts[h[metadata.RedriveAttempts]], id)
		}
		for a := 1; a <= pass; a++ {
			got := slices.Sorted(slices.Values(byAttempts[strconv.Itoa(a)]))
			if !slices.Equal(got, stillBad) {
				t.Errorf("redrive %d: letters with %s = %d: ids %v, want %v", pass, metadata.RedriveAttempts, a, got, stillBad)
			}
		}
	}
	after, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int32{0, 1} {
		a, _ := committed.Lookup(topic, p)
		b, _ := after.Lookup(topic, p)
		if a.At != b.At {
			t.Errorf("partition %d: committed offset moved from %d to %d", p, a.At, b.At)
		}
	}
}

type row struct {
	ID        int64 `json:"id"`
	Partition int64 `json:"pico_partition"`
	Offset    int64 `json:"pico_offset"`
}

// readRows reads id, pico_partition and pico_offset of every row with
// delta-rs.
func readRows(t *testing.T, uri string) []row {
	t.Helper()
	out := pyenv.Run(t, `
import sys, json
from deltalake import DeltaTable
rows = DeltaTable(sys.argv[1]).to_pyarrow_table(columns=["id", "pico_partition", "pico_offset"]).to_pylist()
print(json.dumps(rows))
`, uri)
	var rows []row
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return rows
}
