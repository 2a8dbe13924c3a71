package deltalog_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

const createSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`

func TestNewTableProtocol(t *testing.T) {
	cases := []struct {
		schema string
		want   deltalog.Protocol
	}{
		{createSchema, deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{`{"type":"struct","fields":[{"name":"t","type":"timestamp","nullable":true,"metadata":{}}]}`,
			deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{`{"type":"struct","fields":[{"name":"t","type":"timestamp_ntz","nullable":true,"metadata":{}}]}`,
			deltalog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"timestampNtz"}}},
		// Nested at any depth counts.
		{`{"type":"struct","fields":[{"name":"a","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"t","type":"timestamp_ntz","nullable":true,"metadata":{}}]},"containsNull":true},"nullable":true,"metadata":{}}]}`,
			deltalog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"timestampNtz"}}},
	}
	for _, c := range cases {
		got := deltalog.NewTableProtocol(mustSchema(t, c.schema))
		if got.MinReaderVersion != c.want.MinReaderVersion || got.MinWriterVersion != c.want.MinWriterVersion ||
			!slices.Equal(got.ReaderFeatures, c.want.ReaderFeatures) || !slices.Equal(got.WriterFeatures, c.want.WriterFeatures) {
			t.Errorf("%s: protocol %+v, want %+v", c.schema, got, c.want)
		}
	}
}

func TestNewTableRefusesWhatItCouldNotWrite(t *testing.T) {
	for _, s := range []string{
		`{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}}]}`,
		`{"type":"struct","fields":[{"name":"x","type":"uint128","nullable":true,"metadata":{}}]}`,
	} {
		if _, err := deltalog.NewTable(mustSchema(t, s), nil, nil, time.Now()); !errors.Is(err, deltalog.ErrNotWritable) {
			t.Errorf("%s: err %v, want ErrNotWritable", s, err)
		}
	}
}

func newTableSnap(t *testing.T, partitions ...string) *deltalog.Snapshot {
	t.Helper()
	s, err := deltalog.NewTable(mustSchema(t, createSchema), partitions, nil, time.UnixMilli(1_700_000_000_000))
	if err != nil {
		t.Fatal(err)
	}
	if !s.IsNew() || s.Version != -1 {
		t.Fatalf("new table at version %d", s.Version)
	}
	return s
}

func appendOf(app string, v int64, file string) deltalog.AppendCommit {
	return deltalog.AppendCommit{AppID: app, AppVersion: v,
		Files: []deltalog.DataFile{{Path: file, PartitionValues: deltalog.PartitionValues{}, Size: 10}}}
}

func withPartition(c deltalog.AppendCommit) deltalog.AppendCommit {
	c.Files[0].PartitionValues = deltalog.PartitionValues{"p": sp("a")}
	return c
}

func TestCreateCommitsVersion0WithTheAppend(t *testing.T) {
	store := deltalog.NewMemStore()
	res, err := deltalog.CommitAppend(ctx, store, newTableSnap(t), appendOf("a", 7, "f0.parquet"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 0 || res.AlreadyCommitted || res.Snapshot.IsNew() {
		t.Fatalf("result %+v", res)
	}
	c, err := deltalog.ReadCommit(ctx, store, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, a := range c.Actions {
		kinds = append(kinds, a.Kind())
	}
	if !slices.Equal(kinds, []string{"commitInfo", "protocol", "metaData", "txn", "add"}) {
		t.Fatalf("version 0 holds %v", kinds)
	}
	if ci := c.Actions[0].(*deltalog.CommitInfo); ci.Operation != "CREATE TABLE AS SELECT" || ci.ReadVersion != nil {
		t.Errorf("commitInfo %+v", ci)
	}
	snap := load(t, store)
	if v, ok := snap.TxnVersion("a"); !ok || v != 7 || snap.Metadata.ID != res.Snapshot.Metadata.ID ||
		snap.Protocol.MinReaderVersion != 1 || snap.Protocol.MinWriterVersion != 2 {
		t.Fatalf("loaded %+v", snap)
	}
	// The same append again (a replay) is already committed.
	again, err := deltalog.CommitAppend(ctx, store, res.Snapshot, appendOf("a", 7, "f1.parquet"), nil)
	if err != nil || !again.AlreadyCommitted {
		t.Fatalf("replay: %+v, %v", again, err)
	}
}

// hookStore runs hook once, just before the first put of version 0: the
// other creator gets there first after both saw an empty log.
type hookStore struct {
	*deltalog.MemStore
	once sync.Once
	hook func()
}

func (h *hookStore) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	if path == deltalog.CommitPath(0) {
		h.once.Do(h.hook)
	}
	return h.MemStore.PutIfAbsent(ctx, path, data)
}

func TestCreateRaceLoserAppendsOnTheWinnersTable(t *testing.T) {
	mem := deltalog.NewMemStore()
	var winner *deltalog.CommitResult
	store := &hookStore{MemStore: mem, hook: func() {
		var err error
		if winner, err = deltalog.CommitAppend(ctx, mem, newTableSnap(t), appendOf("w", 1, "w.parquet"), nil); err != nil {
			t.Error(err)
		}
	}}
	lost := 0
	res, err := deltalog.CommitAppend(ctx, store, newTableSnap(t), appendOf("l", 5, "l.parquet"),
		&deltalog.CommitOptions{LostRace: func(int64) { lost++ }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 1 || lost != 1 || res.Snapshot.Metadata.ID != winner.Snapshot.Metadata.ID {
		t.Fatalf("loser: version %d, lost %d, id %s (winner %s)", res.Version, lost, res.Snapshot.Metadata.ID, winner.Snapshot.Metadata.ID)
	}
	snap := load(t, mem)
	w, okW := snap.TxnVersion("w")
	l, okL := snap.TxnVersion("l")
	if snap.Version != 1 || !okW || w != 1 || !okL || l != 5 {
		t.Fatalf("table %d, txns %v", snap.Version, snap.Txns)
	}
}

func TestCreateRaceLoserWithAnotherDefinitionStops(t *testing.T) {
	mem := deltalog.NewMemStore()
	store := &hookStore{MemStore: mem, hook: func() {
		if _, err := deltalog.CommitAppend(ctx, mem, newTableSnap(t, "p"), withPartition(appendOf("w", 1, "p=a/w.parquet")), nil); err != nil {
			t.Error(err)
		}
	}}
	_, err := deltalog.CommitAppend(ctx, store, newTableSnap(t), appendOf("l", 5, "l.parquet"), nil)
	var cc *deltalog.CreateConflictError
	if !errors.As(err, &cc) || !errors.Is(err, deltalog.ErrCreateConflict) || cc.Existing.Version != 0 {
		t.Fatalf("err %v, want a CreateConflictError", err)
	}
	if snap := load(t, mem); snap.Version != 0 {
		t.Fatalf("table at version %d, want only the winner's", snap.Version)
	}
}

// A table created after the new-table snapshot was made is found before
// the put: version 0 may be gone from its log (cleaned up behind a
// checkpoint), where put-if-absent would not protect it.
func TestCreateFindsATableMadeMeanwhile(t *testing.T) {
	store := deltalog.NewMemStore()
	mine := newTableSnap(t)
	other, err := deltalog.CommitAppend(ctx, store, newTableSnap(t), appendOf("w", 1, "w.parquet"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deltalog.CommitAppend(ctx, store, other.Snapshot, appendOf("w", 2, "w2.parquet"), nil); err != nil {
		t.Fatal(err)
	}
	res, err := deltalog.CommitAppend(ctx, store, mine, appendOf("l", 1, "l.parquet"), nil)
	if err != nil || res.Version != 2 || res.Snapshot.Metadata.ID != other.Snapshot.Metadata.ID {
		t.Fatalf("%+v, %v", res, err)
	}
	// With another definition it is refused, before anything is put.
	_, err = deltalog.CommitAppend(ctx, store, newTableSnap(t, "p"), withPartition(appendOf("x", 1, "p=a/x.parquet")), nil)
	if !errors.Is(err, deltalog.ErrCreateConflict) {
		t.Fatalf("err %v, want ErrCreateConflict", err)
	}
	if snap := load(t, store); snap.Version != 2 {
		t.Fatalf("table at version %d", snap.Version)
	}
	// Version 0 gone (cleaned up): put-if-absent would take its name; the
	// log's later commits stop the creation first.
	if err := store.Delete(ctx, deltalog.CommitPath(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := deltalog.CommitAppend(ctx, store, newTableSnap(t), appendOf("y", 1, "y.parquet"), nil); err == nil {
		t.Fatal("a table was created over a log without its version 0")
	}
	if _, err := store.Get(ctx, deltalog.CommitPath(0)); !errors.Is(err, deltalog.ErrNotFound) {
		t.Fatalf("version 0: %v", err)
	}
}

func TestDefinitionDiff(t *testing.T) {
	a, b := newTableSnap(t), newTableSnap(t)
	if d := deltalog.DefinitionDiff(a, b); d != "" {
		t.Errorf("same definitions differ: %s", d)
	}
	if d := deltalog.DefinitionDiff(a, newTableSnap(t, "p")); d == "" {
		t.Error("partition columns not compared")
	}
	other, err := deltalog.NewTable(mustSchema(t, `{"type":"struct","fields":[{"name":"id","type":"integer","nullable":true,"metadata":{}}]}`), nil, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if d := deltalog.DefinitionDiff(a, other); d == "" {
		t.Error("schemas not compared")
	}
}

// An append that adds columns (schema_evolution) to a table it creates
// puts one metaData in version 0: the one with the columns. Racing a
// creator, it is rebuilt (ErrConcurrentModification) rather than adding
// columns worked out for a table that lost.
func TestCreateWithAddedColumns(t *testing.T) {
	withNote := func(s *deltalog.Snapshot, c deltalog.AppendCommit) deltalog.AppendCommit {
		md, err := deltalog.WithColumns(&s.Metadata, []deltalog.StructField{{Name: "note", Type: deltalog.TypeString, Nullable: true}})
		if err != nil {
			t.Fatal(err)
		}
		c.Metadata = md
		return c
	}
	store := deltalog.NewMemStore()
	s := newTableSnap(t)
	if _, err := deltalog.CommitAppend(ctx, store, s, withNote(s, appendOf("a", 1, "a.parquet")), nil); err != nil {
		t.Fatal(err)
	}
	c, err := deltalog.ReadCommit(ctx, store, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, a := range c.Actions {
		kinds = append(kinds, a.Kind())
	}
	if !slices.Equal(kinds, []string{"commitInfo", "protocol", "metaData", "txn", "add"}) {
		t.Fatalf("version 0 holds %v", kinds)
	}
	if snap := load(t, store); snap.Schema.Field("note") == nil || snap.Metadata.ID != s.Metadata.ID {
		t.Fatalf("schema %s", snap.Schema)
	}

	mine := newTableSnap(t)
	_, err = deltalog.CommitAppend(ctx, store, mine, withNote(mine, appendOf("b", 1, "b.parquet")), nil)
	if !errors.Is(err, deltalog.ErrConcurrentModification) {
		t.Fatalf("err %v, want ErrConcurrentModification", err)
	}
	if snap := load(t, store); snap.Version != 0 {
		t.Fatalf("table at version %d", snap.Version)
	}
}

// A table that an earlier delivery of ours created meanwhile, recording
// our application transaction below this append's, is not adopted: this
// batch was filtered against no table and holds records that one has. It
// is aborted to be rebuilt, as on an existing table (found in review).
func TestCreateDoesNotAdoptATableWithOurOlderTxn(t *testing.T) {
	store := deltalog.NewMemStore()
	mine := newTableSnap(t)
	if _, err := deltalog.CommitAppend(ctx, store, newTableSnap(t), appendOf("a", 9, "early.parquet"), nil); err != nil {
		t.Fatal(err)
	}
	_, err := deltalog.CommitAppend(ctx, store, mine, appendOf("a", 19, "late.parquet"), nil)
	var te *deltalog.ConcurrentTxnError
	if !errors.As(err, &te) || te.AppVersion != 9 || !errors.Is(err, deltalog.ErrConcurrentModification) {
		t.Fatalf("err %v, want a ConcurrentTxnError at 9", err)
	}
	if snap := load(t, store); snap.Version != 0 {
		t.Fatalf("table at version %d, want only the earlier delivery's", snap.Version)
	}
	// The race for version 0 lost the same way.
	mem := deltalog.NewMemStore()
	racer := &hookStore{MemStore: mem, hook: func() {
		if _, err := deltalog.CommitAppend(ctx, mem, newTableSnap(t), appendOf("a", 9, "early.parquet"), nil); err != nil {
			t.Error(err)
		}
	}}
	if _, err := deltalog.CommitAppend(ctx, racer, newTableSnap(t), appendOf("a", 19, "late.parquet"), nil); !errors.As(err, &te) {
		t.Fatalf("lost race: err %v, want a ConcurrentTxnError", err)
	}
}

// An append marked NoAdopt (an upsert's first commit) never goes on top
// of a table another writer created, found before the put or winning
// version 0: ErrConcurrentModification, and the table keeps only the
// winner's commit.
func TestCreateNoAdopt(t *testing.T) {
	noAdopt := func(c deltalog.AppendCommit) deltalog.AppendCommit { c.NoAdopt = true; return c }
	// Found before the put.
	store := deltalog.NewMemStore()
	mine := newTableSnap(t)
	if _, err := deltalog.CommitAppend(ctx, store, newTableSnap(t), appendOf("w", 1, "w.parquet"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := deltalog.CommitAppend(ctx, store, mine, noAdopt(appendOf("l", 1, "l.parquet")), nil); !errors.Is(err, deltalog.ErrConcurrentModification) {
		t.Fatalf("found before the put: %v, want ErrConcurrentModification", err)
	}
	if snap := load(t, store); snap.Version != 0 {
		t.Fatalf("table at version %d, want only the winner's", snap.Version)
	}
	// Winning version 0.
	mem := deltalog.NewMemStore()
	hooked := &hookStore{MemStore: mem, hook: func() {
		if _, err := deltalog.CommitAppend(ctx, mem, newTableSnap(t), appendOf("w", 1, "w.parquet"), nil); err != nil {
			t.Error(err)
		}
	}}
	if _, err := deltalog.CommitAppend(ctx, hooked, newTableSnap(t), noAdopt(appendOf("l", 5, "l.parquet")), nil); !errors.Is(err, deltalog.ErrConcurrentModification) {
		t.Fatalf("lost version 0: %v, want ErrConcurrentModification", err)
	}
	if snap := load(t, mem); snap.Version != 0 {
		t.Fatalf("table at version %d, want only the winner's", snap.Version)
	}
}
