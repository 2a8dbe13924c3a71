package source_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/connect/audit/source"
)

// Reading back many small holes of a partition, one Read each (as
// Reconcile does), returns exactly each hole's records, in order, and
// another partition's read after them too.
func TestKafkaReadManyRanges(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 600
	ctx := context.Background()
	for p := range int32(2) {
		var rs []*kgo.Record
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: "a", Partition: p, Value: fmt.Appendf(nil, "%d", i)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	k, err := source.NewKafka([]kgo.Opt{kgo.SeedBrokers(kf.ListenAddrs()...)})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	start := time.Now()
	reads := 0
	for p := range int32(2) {
		tp := audit.TP{Topic: "a", Partition: p}
		for from := int64(0); from < n; from += 3 { // holes of 2, every 3rd offset
			var got []int64
			err := k.Read(ctx, tp, from, from+2, func(r audit.Record) error {
				if string(r.Value) != fmt.Sprint(r.Offset) {
					return fmt.Errorf("offset %d holds %q", r.Offset, r.Value)
				}
				got = append(got, r.Offset)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0] != from || got[1] != from+1 {
				t.Fatalf("%s %d-%d: got %v", tp, from, from+1, got)
			}
			reads++
		}
	}
	t.Logf("%d reads in %v", reads, time.Since(start))
}
