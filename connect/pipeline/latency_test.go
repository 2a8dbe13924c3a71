package pipeline_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// trickle produces n JSON records to topic, one at a time every gap, in
// the background: a steady trickle that never leaves a bucket idle for a
// long poll_interval. The test waits for it before it ends.
func trickle(t *testing.T, kf *kfake.Cluster, topic string, n int, gap time.Duration) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(func() { wg.Wait(); cl.Close() })
	go func() {
		defer wg.Done()
		for i := range n {
			r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"n":%d}`, i)}
			if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			time.Sleep(gap)
		}
	}()
}

// ages is a fake plugin that keeps, per batch, its size and how old its
// oldest record (by the producer's timestamp) was when it was delivered.
type ages struct {
	mu    sync.Mutex
	sizes []int
	worst []time.Duration
}

func (a *ages) plugin() *fakeplugin.Plugin {
	return &fakeplugin.Plugin{Decide: func(b hostclient.Batch, _ int) fakeplugin.Result {
		now := time.Now()
		oldest := b.Records[0].TimestampMs
		for _, r := range b.Records {
			oldest = min(oldest, r.TimestampMs)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		a.sizes = append(a.sizes, len(b.Records))
		a.worst = append(a.worst, now.Sub(time.UnixMilli(oldest)))
		return fakeplugin.Result{}
	}}
}

func (a *ages) get() ([]int, []time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.sizes...), append([]time.Duration(nil), a.worst...)
}

// With max_batch_latency a trickle into a block whose batch_length and
// poll_interval are never reached is delivered in batches whose oldest
// record waited about the bound, not until shutdown; without it the
// bucket waits for batch_length, as the spec says.
func TestMaxBatchLatency(t *testing.T) {
	const total, gap = 150, 5 * time.Millisecond
	t.Run("bounded", func(t *testing.T) {
		// The margin covers the producer, the fetch (50ms fetch wait
		// in the harness) and a loaded machine; the unbounded loop
		// delivers nothing at all before shutdown.
		const bound, margin = 200 * time.Millisecond, 800 * time.Millisecond
		var a ages
		kf := cluster(t, "a")
		h := newHarness(t, kf, "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 100000\npoll_interval = \"1h\"\nmax_batch_latency = \"200ms\"\n", fake(a.plugin()))
		h.start()
		trickle(t, kf, "a", total, gap)
		poll.Until(t, 30*time.Second, "every record committed", func() bool { return committed(t, kf, group, "a")["a"] == total })
		sizes, worst := a.get()
		if len(sizes) < 2 {
			t.Errorf("batches %v: want the trickle cut into several", sizes)
		}
		for i, w := range worst {
			if w > bound+margin {
				t.Errorf("batch %d (%d records): its oldest record was %s old at delivery, over %s + %s", i, sizes[i], w, bound, margin)
			}
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if dups := duplicates(t, h.lines(), "a", total); dups != 0 {
			t.Errorf("%d duplicates", dups)
		}
	})
	t.Run("off", func(t *testing.T) {
		const batch = 50
		var a ages
		kf := cluster(t, "a")
		h := newHarness(t, kf, fmt.Sprintf("[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = %d\npoll_interval = \"1h\"\n", batch), fake(a.plugin()))
		h.start()
		trickle(t, kf, "a", total, gap)
		poll.Until(t, 30*time.Second, "three full batches committed", func() bool { return committed(t, kf, group, "a")["a"] == total })
		if sizes, _ := a.get(); len(sizes) != total/batch || sizes[0] != batch || sizes[1] != batch || sizes[2] != batch {
			t.Errorf("batch sizes %v, want %d of %d", sizes, total/batch, batch)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}
