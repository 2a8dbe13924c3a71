package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// The walk back through the log finds every rejection our commits recorded
// for the offsets a replay skips, across other writers' commits and across
// its read windows, and stops at the first commit of ours below them.
func TestFindRejectionsWalksBackToTheFirstSkippedOffset(t *testing.T) {
	store, snaps := appendTable(t, 0)
	snap := snaps[0]
	ctx := context.Background()
	commit := func(appID string, last int64, rejected map[string][]uint64) {
		t.Helper()
		c := deltalog.AppendCommit{AppID: appID, AppVersion: last,
			Files: []deltalog.DataFile{{Path: fmt.Sprintf("%s-%d.parquet", appID, last), Size: 1}}}
		if rejected != nil {
			raw, _ := json.Marshal(rejected)
			c.Info = map[string]json.RawMessage{rejectedKey: raw}
		}
		res, err := deltalog.CommitAppend(ctx, store, snap, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
	}
	commit("a", 9, map[string][]uint64{"value": {3}})      // offsets ..9: before the replay
	commit("a", 19, map[string][]uint64{"encoding": {12}}) // 10..19
	for i := range 40 {                                    // three read windows of another writer
		commit("b", int64(i), map[string][]uint64{"value": {uint64(i)}})
	}
	commit("a", 29, map[string][]uint64{"value": {20, 29}, "size": {25}}) // 20..29
	commit("a", 39, nil)                                                  // 30..39, nothing rejected
	tb := &table{store: store, snap: snap}

	found, ok, err := tb.findRejections(ctx, "a", 10)
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	want := map[uint64]sdk.RejectReason{12: sdk.RejectEncoding, 20: sdk.RejectValue, 25: sdk.RejectSize, 29: sdk.RejectValue}
	if len(found) != len(want) {
		t.Fatalf("found %v, want %v", found, want)
	}
	for o, r := range want {
		if found[o].reason != r {
			t.Errorf("offset %d: %+v, want %v", o, found[o], r)
		}
	}
	if found[12].version != 2 || found[25].version != 43 {
		t.Errorf("versions %d, %d: want 2 and 43", found[12].version, found[25].version)
	}

	// From the log's start: every commit read, still complete.
	if found, ok, err := tb.findRejections(ctx, "a", 0); err != nil || !ok || len(found) != 5 {
		t.Fatalf("from 0: %v %v %v", found, ok, err)
	}
	// A commit cleaned up from the log before the walk ends it: not known.
	if err := store.Delete(ctx, deltalog.CommitPath(1)); err != nil {
		t.Fatal(err)
	}
	if found, ok, err := tb.findRejections(ctx, "a", 10); err != nil || ok {
		t.Fatalf("after cleanup: %v %v %v, want not ok", found, ok, err)
	}
	// ... unless the walk stops before it.
	if _, ok, err := tb.findRejections(ctx, "a", 20); err != nil || !ok {
		t.Fatalf("from 20: %v %v", ok, err)
	}
}

// A redrive batch whose earlier commits cannot be found fails FATAL naming
// the dead-letter offsets in doubt: deciding them again against today's
// (fixed) schema would skip a record rejected then as written.
func TestRecheckRedriveWithoutItsCommitsIsFatal(t *testing.T) {
	store, snaps := appendTable(t, 0)
	snap := snaps[0]
	ctx := context.Background()
	for _, last := range []int64{9, 19} {
		res, err := deltalog.CommitAppend(ctx, store, snap, deltalog.AppendCommit{AppID: "r", AppVersion: last,
			Files: []deltalog.DataFile{{Path: fmt.Sprintf("r-%d.parquet", last), Size: 1}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
	}
	if err := store.Delete(ctx, deltalog.CommitPath(1)); err != nil { // the commit of 0..9
		t.Fatal(err)
	}
	tb := &table{uri: "file:///t", store: store, snap: snap, env: &tableEnv{opts: tableOptions{exactlyOnce: true}}}
	b := &sdk.Batch{Topic: "o", Records: []sdk.Record{{Offset: 100, Payload: []byte(`{}`)}, {Offset: 101, Payload: []byte(`{}`)}},
		Redrive: &sdk.Redrive{Topic: "o.dlq", Partition: 2, Offsets: []uint64{5, 7}}}
	b.AcceptRejections()
	err := tb.recheck(ctx, b, "r", 2)
	if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(fmt.Sprint(err), "o.dlq/2 at offsets 5..7") ||
		!strings.Contains(fmt.Sprint(err), "picomq-connect audit") {
		t.Fatalf("recheck: %v (status %v), want FATAL naming o.dlq/2 at offsets 5..7 and the audit", err, sdk.StatusOf(err))
	}
}
