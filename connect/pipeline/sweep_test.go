package pipeline_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// With max_batch_latency and max_in_flight above 1, buckets flush together:
// a steady trickle round-robin over 8 partitions, one record every 25 ms,
// starts each partition's clock 25 ms after the previous one's; flushed each
// on its own clock the batches reach the plugin one at a time, 25 ms apart;
// swept, several at once, so that a group commit makes one version of them.
// (Without the sweep this run gave 1.8 batches per moment, with it 3.7.)
func TestBucketsFlushTogether(t *testing.T) {
	const parts, total, gap = 8, 120, 25 * time.Millisecond
	kf := partitioned(t, parts, 0) // the trickle below produces
	var mu sync.Mutex
	var starts []time.Time
	p := &fakeplugin.Plugin{Concurrent: true, Decide: func(hostclient.Batch, int) fakeplugin.Result {
		mu.Lock()
		defer mu.Unlock()
		starts = append(starts, time.Now())
		return fakeplugin.Result{}
	}}
	h := newHarness(t, kf, fmt.Sprintf("[[topics]]\ntopics = [\"p\"]\nschema = \"json\"\nbatch_length = 100000\npoll_interval = \"1h\"\nmax_batch_latency = \"300ms\"\nmax_in_flight = %d\n", parts), fake(p))
	h.start()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range total {
		r := &kgo.Record{Topic: "p", Partition: int32(i % parts), Value: fmt.Appendf(nil, `{"n":%d}`, i)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(gap)
	}
	poll.Until(t, 30*time.Second, "every record committed", func() bool {
		var sum int64
		for _, o := range committedP(t, kf, parts) {
			sum += max(o, 0)
		}
		return sum == total
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// A moment: batches that reached the plugin within 15 ms of
	// the first of them.
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	moments := 0
	var first time.Time
	for _, s := range starts {
		if moments == 0 || s.Sub(first) > 15*time.Millisecond {
			moments++
			first = s
		}
	}
	per := float64(len(starts)) / float64(moments)
	t.Logf("%d batches at %d moments, %.1f per moment", len(starts), moments, per)
	if per < 2.5 {
		t.Errorf("%.1f batches per moment: the buckets did not flush together", per)
	}
}
