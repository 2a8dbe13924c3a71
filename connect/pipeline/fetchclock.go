package pipeline

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchKey is the Kafka API key of a Fetch request.
const fetchKey = 1

// fetchClock records, per broker, the last fetch answer whose records the
// loop has polled (kgo hooks). It lets a block whose fetches wait as long
// as its poll_interval still tell an idle bucket from a steady stream
// between fetches.
//
// Why: poll_interval is "this long with nothing new arriving". The runtime
// sees records only when a fetch answers, so a fetch that waits as long
// as poll_interval makes every gap of a steady stream look idle, and its
// buckets flush at about half of batch_length (docs/runtime.md, "Steady
// traffic"). Until now the derived wait was half of poll_interval, which
// avoided that at the cost of twice the fetches, and the runtime's CPU at a
// steady rate goes per fetch (measured: 20 fetches/s cost 10 ms of CPU per
// second on an idle topic, 2 fetches/s 2 ms). With the clock a bucket is
// quiet once poll_interval passed since its last records and its broker
// answered a fetch after them without new ones (a long-poll fetch covers
// everything up to its answer), so the wait can be the whole
// poll_interval. A broker that does not answer delays an idle flush by at
// most one fetch wait (quiet's bound).
//
// The read of an answer is not enough: kgo calls the read hook before it
// decodes the answer and hands its records to a poll. But the client
// writes a broker's next fetch only after the previous answer was decoded
// and, if it held records, a poll took them (and the loop appends what a
// poll took before it looks at any bucket). So the answer read last before
// a fetch is written is settled: if it held records of a bucket, that
// bucket's last arrival is after it.
type fetchClock struct {
	brokers sync.Map // node ID → *brokerFetches
	// waitSince (Unix nanoseconds; 0: none) is the last arrival of the
	// bucket that has waited longest for its broker's answer (see
	// nextIdleFlush).
	waitSince    atomic.Int64
	pollInterval time.Duration
	wake         *waker
}

// brokerFetches is one broker's fetch answers.
type brokerFetches struct {
	mu      sync.Mutex
	read    time.Time // when an answer was last read
	settled time.Time // the read time of the last answer settled
	// carried: the answer last read held records. The client calls the
	// batch hook while it decodes an answer, after the read hook and
	// before the next fetch is written.
	carried atomic.Bool
}

var (
	_ kgo.HookBrokerRead     = (*fetchClock)(nil)
	_ kgo.HookBrokerWrite    = (*fetchClock)(nil)
	_ kgo.HookFetchBatchRead = (*fetchClock)(nil)
)

func newFetchClock(wake *waker, pollInterval time.Duration) *fetchClock {
	return &fetchClock{wake: wake, pollInterval: pollInterval}
}

func (f *fetchClock) broker(node int32) *brokerFetches {
	if b, ok := f.brokers.Load(node); ok {
		return b.(*brokerFetches)
	}
	b, _ := f.brokers.LoadOrStore(node, &brokerFetches{})
	return b.(*brokerFetches)
}

// OnBrokerRead runs in the client's connection goroutine when a response
// was read.
func (f *fetchClock) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != fetchKey || err != nil {
		return
	}
	b := f.broker(meta.NodeID)
	b.carried.Store(false)
	now := time.Now()
	b.mu.Lock()
	b.read = now
	b.mu.Unlock()
}

// OnFetchBatchRead runs for each record batch the client decodes.
func (f *fetchClock) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, _ int32, _ kgo.FetchBatchMetrics) {
	f.broker(meta.NodeID).carried.Store(true)
}

// OnBrokerWrite runs when a request was written: a fetch settles the
// broker's last answer. An answer that held records wakes the loop by
// itself (its poll returns them). An empty one that may end the wait of
// the bucket waiting longest wakes the poll: at once, or when that bucket
// is poll_interval old if that is later (an empty answer can come just
// before, to a fetch written while the poll took the bucket's last
// records).
func (f *fetchClock) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != fetchKey || err != nil {
		return
	}
	b := f.broker(meta.NodeID)
	b.mu.Lock()
	b.settled = b.read
	read := b.read.UnixNano()
	b.mu.Unlock()
	since := f.waitSince.Load()
	if b.carried.Load() || since == 0 || read <= since {
		return
	}
	if d := time.Until(time.Unix(0, since).Add(f.pollInterval)); d > 0 {
		time.AfterFunc(d, f.wake.poke)
	} else {
		f.wake.poke()
	}
}

// answeredSince reports whether broker node's answer read after t is
// settled. An unknown node (-1: the partition's leader not known) is
// answered by any broker's.
func (f *fetchClock) answeredSince(node int32, t time.Time) bool {
	settledAfter := func(b *brokerFetches) bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.settled.After(t)
	}
	if node >= 0 {
		b, ok := f.brokers.Load(node)
		return ok && settledAfter(b.(*brokerFetches))
	}
	answered := false
	f.brokers.Range(func(_, b any) bool {
		answered = settledAfter(b.(*brokerFetches))
		return !answered
	})
	return answered
}
