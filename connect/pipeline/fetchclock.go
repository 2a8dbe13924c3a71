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
	mu      sync.Mutex
	read    map[int32]time.Time // by broker node ID: when a fetch answer was last read
	settled map[int32]time.Time // by broker node ID: the read time of the last answer settled
	// wakeFrom (Unix nanoseconds; 0: never) is when the first bucket
	// waiting for its broker's answer is past poll_interval: a fetch
	// written from then on wakes the poll. Not before, or a steady
	// stream's every fetch would wake it once more.
	wakeFrom atomic.Int64
	wake     *waker
}

var (
	_ kgo.HookBrokerRead  = (*fetchClock)(nil)
	_ kgo.HookBrokerWrite = (*fetchClock)(nil)
)

func newFetchClock(wake *waker) *fetchClock {
	return &fetchClock{read: map[int32]time.Time{}, settled: map[int32]time.Time{}, wake: wake}
}

// OnBrokerRead runs in the client's connection goroutine when a response
// was read.
func (f *fetchClock) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != fetchKey || err != nil {
		return
	}
	now := time.Now()
	f.mu.Lock()
	f.read[meta.NodeID] = now
	f.mu.Unlock()
}

// OnBrokerWrite runs when a request was written: a fetch settles the
// broker's last answer.
func (f *fetchClock) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != fetchKey || err != nil {
		return
	}
	f.mu.Lock()
	f.settled[meta.NodeID] = f.read[meta.NodeID]
	f.mu.Unlock()
	if from := f.wakeFrom.Load(); from != 0 && time.Now().UnixNano() >= from {
		f.wake.poke()
	}
}

// answeredSince reports whether broker node's answer read after t is
// settled. An unknown node (-1: the partition's leader not known) is
// answered by any broker's.
func (f *fetchClock) answeredSince(node int32, t time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if node >= 0 {
		return f.settled[node].After(t)
	}
	for _, at := range f.settled {
		if at.After(t) {
			return true
		}
	}
	return false
}
