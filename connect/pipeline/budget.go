package pipeline

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Budget counts the bytes every consumer of every sink holds in its
// buckets (key, value and headers of each buffered record) and caps them:
// runtime-wide, because the process is what the OOM killer stops, and a
// cap per block would have to be sized for each block's worst case while
// the traffic moves between them. One Budget is shared by every sink of a
// process (Config.Budget).
type Budget struct {
	limit   int64 // 0: no cap, only counted
	used    atomic.Int64
	peak    atomic.Int64
	flushes atomic.Int64
}

// NewBudget returns a Budget capped at limit bytes; 0 counts without a cap.
func NewBudget(limit int64) *Budget { return &Budget{limit: max(limit, 0)} }

// Limit is the cap; 0 for none.
func (b *Budget) Limit() int64 { return b.limit }

// Used is the bytes buffered now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Peak is the most bytes ever buffered at once.
func (b *Budget) Peak() int64 { return b.peak.Load() }

// EarlyFlushes counts the batches flushed before batch_length or their
// deadline because the cap was reached.
func (b *Budget) EarlyFlushes() int64 { return b.flushes.Load() }

// add counts n more bytes buffered (n < 0: released). Called once per poll
// or batch, not per record.
func (b *Budget) add(n int64) {
	u := b.used.Add(n)
	for p := b.peak.Load(); u > p && !b.peak.CompareAndSwap(p, u); p = b.peak.Load() {
	}
}

// over reports whether the cap is set and exceeded.
func (b *Budget) over() bool { return b.limit > 0 && b.used.Load() > b.limit }

// recordBytes is what a buffered record counts against the budget.
func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}
