package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/connect/transform"
)

// TP is one topic-partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) String() string { return fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition) }

// Offsets is what the broker says of a partition: the first offset it
// still holds, the next one it will write, and the group's committed
// offset (-1: none).
type Offsets struct {
	LogStart, End, Committed int64
}

// Proof is what a destination's account of a partition rests on.
type Proof string

const (
	// ProofRows: the table's rows carry their offsets (Delta's
	// pico_offset and pico_partition, Redshift's id): every offset is
	// checked.
	ProofRows Proof = "rows"
	// ProofTxn: only the destination's claim says how far the sink
	// wrote ("every offset up to N", less the offsets it recorded as
	// rejected): the Delta log's txn version (rejections in commitInfo),
	// or the applied offset of a Redshift upsert target (no rejections
	// recorded); rows are not checked and duplicates cannot be seen.
	ProofTxn Proof = "txn"
)

// Written is one destination's account of one partition.
type Written struct {
	Table string
	Proof Proof
	// Rows counts the rows by offset (ProofRows).
	Rows Count
	// Txn is the last offset the txn action (or a Redshift upsert
	// target's offsets table) records; -1 for none
	// (ProofTxn; with ProofRows informational).
	Txn int64
	// Rejected are the offsets the destination recorded as rejected
	// (Delta's commitInfo): they belong in the dead-letter topic.
	Rejected Set
}

// Record is one record the broker still holds, as the audit reads it back
// to tell a gap from a record the sink was meant to skip.
type Record struct {
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []transform.Header
	Timestamp time.Time
}

// Reader reads back what the broker holds of a partition.
type Reader interface {
	// Read calls fn with each record the broker holds at offsets from ≤ o
	// < to of tp, in offset order; offsets it does not call fn for are
	// gone from the log (compacted).
	Read(ctx context.Context, tp TP, from, to int64, fn func(Record) error) error
}

// Skipper reports whether the sink was meant to leave a record out of
// every destination (a transform dropped it, an empty payload the plugin
// skips); nil skips nothing.
type Skipper func(tp TP, r Record) bool

// Where names which copies of an offset a duplicate is.
type Where string

const (
	InTable       Where = "table"       // two rows or more in the table
	InDeadLetters Where = "dead_letter" // two dead letters or more of the newest redrive attempts
)

// Dup is a run of duplicated offsets, First to Last inclusive.
type Dup struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	Where Where `json:"where"`
}

// Gap is a run of offsets in no destination, First to Last inclusive.
type Gap struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// PartitionReport is one partition's reconciliation. The counts are of
// the audited offsets, log_start ≤ o < committed:
//
//	consumed = written + dead_lettered − in_both + skipped + compacted + missing
type PartitionReport struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Table     string `json:"table"`
	Proof     Proof  `json:"proof"`
	// TxnVersion is the last offset the destination claims (ProofTxn:
	// the Delta txn action, a Redshift upsert target's applied_offset);
	// absent elsewhere.
	TxnVersion *int64 `json:"txn_version,omitempty"`
	LogStart   int64  `json:"log_start"`
	End        int64  `json:"end"`
	Committed  int64  `json:"committed"`
	Consumed   int64  `json:"consumed"`
	Written    int64  `json:"written"`
	DeadLetter int64  `json:"dead_lettered"`
	InBoth     int64  `json:"in_both"`
	Skipped    int64  `json:"skipped"`
	Compacted  int64  `json:"compacted"`
	Missing    int64  `json:"missing"`
	// Rejected counts the offsets the table recorded as rejected.
	Rejected int64 `json:"rejected"`
	// Beyond counts the offsets at or past committed that a destination
	// holds: written, offset not committed yet (a replay skips them).
	Beyond int64 `json:"beyond_committed"`
	// Duplicated counts the offsets held more than once, anywhere.
	Duplicated int64 `json:"duplicated"`
	// Redriven counts the offsets, anywhere, with both a row and a dead
	// letter (ProofRows): a redrive wrote the record and its letter stays
	// in the dead-letter topic. Informational, not a duplicate: the
	// table holds the record once (a second row would be).
	Redriven   int64 `json:"redriven"`
	Gaps       []Gap `json:"gaps"`
	Duplicates []Dup `json:"duplicates"`
}

// Clean reports whether nothing is missing or there twice.
func (p *PartitionReport) Clean() bool { return p.Missing == 0 && p.Duplicated == 0 }

// Reconcile is one partition's account: the broker's offsets, what the
// destination wrote (nil: nothing, not even a table), the dead letters
// by source offset and redrive attempts (nil: the block keeps none; only
// the newest of each offset count, Letters.Newest), and the broker read
// back for the offsets in neither, to tell what it compacted and what the
// sink skipped from what is missing.
func Reconcile(ctx context.Context, tp TP, off Offsets, w *Written, letters *Letters, rd Reader, skip Skipper) (PartitionReport, error) {
	p := PartitionReport{Topic: tp.Topic, Partition: tp.Partition, LogStart: off.LogStart, End: off.End, Committed: off.Committed,
		Gaps: []Gap{}, Duplicates: []Dup{}}
	if w == nil {
		w = &Written{Proof: ProofRows, Txn: -1}
	}
	dead := letters.Newest()
	p.Table, p.Proof = w.Table, w.Proof
	if w.Txn >= 0 {
		v := w.Txn
		p.TxnVersion = &v
	}
	// What the destination holds: its rows, or what its txn claims.
	held := &w.Rows.Once
	if w.Proof == ProofTxn {
		held = &Set{}
		if w.Txn >= 0 {
			held.Add(min(off.LogStart, w.Txn+1), w.Txn+1, nil)
		}
		// A rejected offset is not in the table: its dead letter must be.
		held = minus(held, &w.Rejected)
	}
	from, to := off.LogStart, max(off.Committed, off.LogStart)
	p.Consumed = to - from
	held.Intersect(from, to, func(r Range) { p.Written += r.Len() })
	dead.Once.Intersect(from, to, func(r Range) { p.DeadLetter += r.Len() })
	w.Rejected.Intersect(from, to, func(r Range) { p.Rejected += r.Len() })
	var both Set
	dead.Once.Intersect(from, to, func(r Range) {
		held.Intersect(r.From, r.To, func(b Range) { both.Add(b.From, b.To, nil) })
	})
	p.InBoth = both.Len()
	beyond := Set{}
	held.Intersect(to, maxOffset, func(r Range) { beyond.Add(r.From, r.To, nil) })
	dead.Once.Intersect(to, maxOffset, func(r Range) { beyond.Add(r.From, r.To, nil) })
	p.Beyond = beyond.Len()

	// Duplicates: anywhere, not only in the audited offsets.
	var dups []Dup
	add := func(where Where) func(Range) {
		return func(r Range) { dups = append(dups, Dup{r.From, r.To - 1, where}) }
	}
	var dupSet Set
	if w.Proof == ProofRows {
		for _, r := range w.Rows.Extra.Ranges() {
			add(InTable)(r)
			dupSet.Add(r.From, r.To, nil)
		}
	}
	for _, r := range dead.Extra.Ranges() {
		add(InDeadLetters)(r)
		dupSet.Add(r.From, r.To, nil)
	}
	if w.Proof == ProofRows {
		// A row and a letter is what a successful redrive leaves (the
		// letter stays in the dead-letter topic): the record is in the
		// table once. With only a txn claim it cannot be told from a
		// rejection below the claim.
		for _, r := range dead.Once.Ranges() {
			held.Intersect(r.From, r.To, func(b Range) { p.Redriven += b.Len() })
		}
	}
	slices.SortStableFunc(dups, func(a, b Dup) int { return cmp64(a.First, b.First) })
	p.Duplicates = append(p.Duplicates, dups...)
	p.Duplicated = dupSet.Len()

	// Offsets in neither: read back from the broker.
	var unseen []Range
	var union Set
	union.AddSet(held, nil)
	union.AddSet(&dead.Once, nil)
	union.Missing(from, to, func(r Range) { unseen = append(unseen, r) })
	var gaps Set
	for _, r := range unseen {
		at := r.From
		err := rd.Read(ctx, tp, r.From, r.To, func(rec Record) error {
			if rec.Offset < at || rec.Offset >= r.To {
				return fmt.Errorf("%s: the broker returned offset %d reading %d to %d", tp, rec.Offset, at, r.To-1)
			}
			p.Compacted += rec.Offset - at
			at = rec.Offset + 1
			if skip != nil && skip(tp, rec) {
				p.Skipped++
				return nil
			}
			gaps.Add(rec.Offset, rec.Offset+1, nil)
			return nil
		})
		if err != nil {
			return p, fmt.Errorf("reading back %s offsets %d to %d: %w", tp, r.From, r.To-1, err)
		}
		p.Compacted += r.To - at
	}
	p.Missing = gaps.Len()
	for _, r := range gaps.Ranges() {
		p.Gaps = append(p.Gaps, Gap{r.From, r.To - 1})
	}
	return p, nil
}

const maxOffset = int64(1<<63 - 1)

// minus returns a without the offsets of b.
func minus(a, b *Set) *Set {
	out := &Set{}
	for _, r := range a.Ranges() {
		b.Missing(r.From, r.To, func(m Range) { out.Add(m.From, m.To, nil) })
	}
	return out
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// SinkReport is one sink's reconciliation: every partition of every
// topic its blocks consume.
type SinkReport struct {
	Key        string            `json:"key"`
	File       string            `json:"file"`
	Plugin     string            `json:"plugin"`
	Partitions []PartitionReport `json:"partitions"`
	// Notes say what the audit could not prove, per table or block.
	Notes []string `json:"notes"`
	// Unaudited say what the audit checked nothing of although there
	// was something to check: a topic not on the broker, a partition
	// whose group has no committed offset (yet the destination or the
	// dead-letter topic holds offsets of it) or committed one below the
	// log start. The report is then not clean.
	Unaudited []string `json:"unaudited"`
}

// Report is the whole audit.
type Report struct {
	Sinks []SinkReport `json:"sinks"`
	// Missing and Duplicated sum the partitions'.
	Missing    int64 `json:"missing"`
	Duplicated int64 `json:"duplicated"`
	// Unaudited counts the sinks' Unaudited.
	Unaudited int `json:"unaudited"`
	// Clean: nothing missing, nothing twice, nothing left unaudited.
	Clean bool `json:"clean"`
}

// Finish sums the partitions into r's totals.
func (r *Report) Finish() {
	r.Missing, r.Duplicated, r.Unaudited = 0, 0, 0
	for _, s := range r.Sinks {
		r.Unaudited += len(s.Unaudited)
		for _, p := range s.Partitions {
			r.Missing += p.Missing
			r.Duplicated += p.Duplicated
		}
	}
	r.Clean = r.Missing == 0 && r.Duplicated == 0 && r.Unaudited == 0
}

// ranges renders runs as "3-7, 9" for the text report, at most limit of
// them.
func ranges[T any](xs []T, limit int, bounds func(T) (int64, int64, string)) string {
	var b strings.Builder
	for i, x := range xs {
		if i == limit {
			fmt.Fprintf(&b, ", … %d more", len(xs)-limit)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		first, last, what := bounds(x)
		if first == last {
			fmt.Fprintf(&b, "%d", first)
		} else {
			fmt.Fprintf(&b, "%d-%d", first, last)
		}
		if what != "" {
			fmt.Fprintf(&b, " (%s)", what)
		}
	}
	return b.String()
}
