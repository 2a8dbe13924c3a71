package source_test

import (
	"context"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/connect/audit/source"
)

// fakeRedshift is one table, "t", with its ids and applied offsets.
type fakeRedshift struct {
	upsert  bool
	ids     map[audit.TP][]int64
	applied map[audit.TP]int64
}

func (f *fakeRedshift) Table(string) (string, error) { return "t", nil }
func (f *fakeRedshift) Upsert() bool                 { return f.upsert }
func (f *fakeRedshift) Offsets(table string) string  { return "offsets_" + table }
func (f *fakeRedshift) IDs(_ context.Context, _ string, _ []string, fn func(string, int32, int64)) (bool, error) {
	for tp, offs := range f.ids {
		for _, o := range offs {
			fn(tp.Topic, tp.Partition, o)
		}
	}
	return true, nil
}
func (f *fakeRedshift) Applied(_ context.Context, _ string, _ []string, fn func(string, int32, int64)) (bool, error) {
	for tp, o := range f.applied {
		fn(tp.Topic, tp.Partition, o)
	}
	return true, nil
}

// holdsNothing is a broker that holds no record: an offset no destination
// accounts for is counted compacted.
type holdsNothing struct{}

func (holdsNothing) Read(context.Context, audit.TP, int64, int64, func(audit.Record) error) error {
	return nil
}

// An upsert target after updates and deletes keeps the rows of two keys
// out of ten changes: the audit proves the partition by its applied
// offset, with the dead letter below it in both, and finds nothing
// missing; the ids alone would show eight offsets unaccounted for.
func TestRedshiftUpsertProofIsTheAppliedOffset(t *testing.T) {
	tp, other := audit.TP{Topic: "orders", Partition: 0}, audit.TP{Topic: "orders", Partition: 1}
	f := &fakeRedshift{upsert: true,
		ids:     map[audit.TP][]int64{tp: {4, 9}},
		applied: map[audit.TP]int64{tp: 9, {Topic: "orders", Partition: 7}: 3}}
	out, notes, err := (&source.Redshift{Cfg: f}).Scan(context.Background(), []audit.TP{tp, other})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "only the applied offsets in offsets_t are checked") || !strings.Contains(all, "1 applied offset(s) of partitions this sink does not consume") {
		t.Errorf("notes %q", notes)
	}
	var dead audit.Letters
	dead.Add(6, 0)
	p, err := audit.Reconcile(context.Background(), tp, audit.Offsets{LogStart: 0, End: 10, Committed: 10}, out[tp], &dead, holdsNothing{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Proof != audit.ProofTxn || p.TxnVersion == nil || *p.TxnVersion != 9 || p.Written != 10 || p.InBoth != 1 ||
		p.Compacted != 0 || !p.Clean() {
		t.Errorf("upsert partition: %+v", p)
	}
	// A partition without an applied offset holds nothing.
	p, err = audit.Reconcile(context.Background(), other, audit.Offsets{LogStart: 0, End: 2, Committed: 2}, out[other], nil, holdsNothing{}, nil)
	if err != nil || p.Written != 0 || p.Compacted != 2 {
		t.Errorf("partition without applied offset: %+v %v", p, err)
	}

	// In append mode the ids are the proof.
	f.upsert = false
	out, _, err = (&source.Redshift{Cfg: f}).Scan(context.Background(), []audit.TP{tp})
	if err != nil {
		t.Fatal(err)
	}
	if w := out[tp]; w.Proof != audit.ProofRows || w.Rows.Once.Len() != 2 {
		t.Errorf("append: %+v", w)
	}
}
