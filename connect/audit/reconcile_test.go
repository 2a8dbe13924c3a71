package audit_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/audit"
)

// fakeLog is a partition's log as the broker holds it: the offsets still
// there (compaction removes some) and their payloads.
type fakeLog map[int64]string

func (l fakeLog) Read(_ context.Context, _ audit.TP, from, to int64, fn func(audit.Record) error) error {
	var offs []int64
	for o := range l {
		if o >= from && o < to {
			offs = append(offs, o)
		}
	}
	slices.Sort(offs)
	for _, o := range offs {
		if err := fn(audit.Record{Offset: o, Value: []byte(l[o])}); err != nil {
			return err
		}
	}
	return nil
}

func rows(offs ...int64) *audit.Written {
	w := &audit.Written{Table: "t", Proof: audit.ProofRows, Txn: -1}
	for _, o := range offs {
		w.Rows.Add(o, o+1)
	}
	return w
}

func span(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

func full(from, to int64) fakeLog {
	l := fakeLog{}
	for o := from; o < to; o++ {
		l[o] = `{"x":1}`
	}
	return l
}

func TestReconcile(t *testing.T) {
	tp := audit.TP{Topic: "orders", Partition: 0}
	ctx := context.Background()
	t.Run("clean", func(t *testing.T) {
		dead := &audit.Letters{}
		dead.Add(4, 0)
		w := rows(append(span(0, 4), span(5, 12)...)...) // 10, 11: past the commit
		p, err := audit.Reconcile(ctx, tp, audit.Offsets{LogStart: 0, End: 12, Committed: 10}, w, dead, full(0, 12), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Clean() || p.Consumed != 10 || p.Written != 9 || p.DeadLetter != 1 || p.Beyond != 2 {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("gap, duplicate, dead letter and row", func(t *testing.T) {
		dead := &audit.Letters{}
		dead.Add(7, 0) // and written: redriven, not twice
		dead.Add(9, 0)
		dead.Add(9, 0) // two dead letters
		w := rows(0, 1, 2, 3, 3, 7, 8)
		// 4, 5, 6 missing; 6 was compacted away.
		l := full(0, 10)
		delete(l, 6)
		p, err := audit.Reconcile(ctx, tp, audit.Offsets{LogStart: 0, End: 10, Committed: 10}, w, dead, l, nil)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(p)
		want := `"gaps":[{"first":4,"last":5}],"duplicates":[{"first":3,"last":3,"where":"table"},{"first":9,"last":9,"where":"dead_letter"}]`
		if !strings.Contains(string(js), want) || p.Missing != 2 || p.Compacted != 1 || p.Duplicated != 2 || p.InBoth != 1 || p.Redriven != 1 {
			t.Fatalf("got %s\nwant %s", js, want)
		}
	})
	t.Run("after a redrive", func(t *testing.T) {
		// 5 was dead-lettered, then redriven and written; 7 was
		// redriven, rejected again (a newer letter) and written by a
		// second redrive. Neither is a duplicate.
		dead := &audit.Letters{}
		dead.Add(5, 0)
		dead.Add(7, 0)
		dead.Add(7, 1)
		w := rows(append(span(0, 7), 8, 9)...)
		p, err := audit.Reconcile(ctx, tp, audit.Offsets{LogStart: 0, End: 10, Committed: 10}, w, dead, full(0, 10), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Clean() || p.Redriven != 1 || p.DeadLetter != 2 || p.InBoth != 1 || p.Missing != 0 || len(p.Duplicates) != 0 {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("two letters of the newest redrive are a duplicate", func(t *testing.T) {
		dead := &audit.Letters{}
		dead.Add(1, 0)
		dead.Add(1, 1)
		dead.Add(1, 1)
		p, err := audit.Reconcile(ctx, tp, audit.Offsets{LogStart: 0, End: 2, Committed: 2}, rows(0), dead, full(0, 2), nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Duplicated != 1 || len(p.Duplicates) != 1 || p.Duplicates[0] != (audit.Dup{First: 1, Last: 1, Where: audit.InDeadLetters}) || p.Redriven != 0 {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("below log start is not a gap", func(t *testing.T) {
		p, err := audit.Reconcile(ctx, tp, audit.Offsets{LogStart: 5, End: 10, Committed: 10}, rows(span(5, 10)...), nil, full(5, 10), nil)
		if err != nil || !p.Clean() || p.Consumed != 5 {
			t.Fatalf("%+v %v", p, err)
		}
	})
	t.Run("skipped", func(t *testing.T) {
		l := full(0, 4)
		l[2] = "" // a tombstone the plugin skips
		skip := func(_ audit.TP, r audit.Record) bool { return len(r.Value) == 0 }
		p, err := audit.Reconcile(ctx, tp, audit.Offsets{LogStart: 0, End: 4, Committed: 4}, rows(0, 1, 3), nil, l, skip)
		if err != nil || !p.Clean() || p.Skipped != 1 {
			t.Fatalf("%+v %v", p, err)
		}
	})
	t.Run("no commit: nothing audited", func(t *testing.T) {
		p, err := audit.Reconcile(ctx, tp, audit.Offsets{LogStart: 0, End: 4, Committed: -1}, nil, nil, full(0, 4), nil)
		if err != nil || !p.Clean() || p.Consumed != 0 {
			t.Fatalf("%+v %v", p, err)
		}
	})
	t.Run("txn claim less a rejection whose dead letter is gone", func(t *testing.T) {
		w := &audit.Written{Table: "t", Proof: audit.ProofTxn, Txn: 9}
		w.Rejected.Add(3, 5, nil)
		dead := &audit.Letters{}
		dead.Add(3, 0) // 4's dead letter is missing
		p, err := audit.Reconcile(ctx, tp, audit.Offsets{LogStart: 0, End: 12, Committed: 12}, w, dead, full(0, 12), nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Missing != 3 || len(p.Gaps) != 2 || p.Gaps[0] != (audit.Gap{First: 4, Last: 4}) || p.Gaps[1] != (audit.Gap{First: 10, Last: 11}) || p.Duplicated != 0 {
			t.Fatalf("%+v", p)
		}
	})
}
