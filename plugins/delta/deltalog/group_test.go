package deltalog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// A group commit carries one txn action per application, and is already
// done only when the table records every one of them.
func TestGroupCommitTxnActions(t *testing.T) {
	s := newTable(t)
	snap := load(t, s)
	c := deltalog.AppendCommit{Files: []deltalog.DataFile{dataFile("part-0.parquet", sp("a"))},
		AppID: "p0", AppVersion: 7, Apps: []deltalog.App{{ID: "p1", Version: 3}, {ID: "p2", Version: 9}}}
	res, err := deltalog.CommitAppend(context.Background(), s, snap, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var txns []string
	for _, a := range res.Actions {
		if x, ok := a.(*deltalog.Txn); ok {
			txns = append(txns, x.AppID)
		}
	}
	if strings.Join(txns, ",") != "p0,p1,p2" {
		t.Errorf("txn actions %v, want p0,p1,p2", txns)
	}
	for id, want := range map[string]int64{"p0": 7, "p1": 3, "p2": 9} {
		if v, ok := res.Snapshot.TxnVersion(id); !ok || v != want {
			t.Errorf("txn %s = %d %v, want %d", id, v, ok, want)
		}
	}
	// The same group again: already committed, nothing written.
	again, err := deltalog.CommitAppend(context.Background(), s, res.Snapshot, c, nil)
	if err != nil || !again.AlreadyCommitted {
		t.Fatalf("replayed group: %+v, %v; want already committed", again, err)
	}
	// Part of it again, with a new member: refused, to be filtered again.
	c.Apps = []deltalog.App{{ID: "p3", Version: 1}}
	_, err = deltalog.CommitAppend(context.Background(), s, res.Snapshot, c, nil)
	var cte *deltalog.ConcurrentTxnError
	if !errors.As(err, &cte) || cte.AppID != "p0" || !errors.Is(err, deltalog.ErrConcurrentModification) {
		t.Errorf("partly committed group: %v, want a ConcurrentTxnError naming p0", err)
	}
}

func TestResolveGroupConflict(t *testing.T) {
	commit := func(v int64, lines ...string) deltalog.Commit {
		a, err := deltalog.ParseActions([]byte(strings.Join(lines, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		return deltalog.Commit{Version: v, Actions: a}
	}
	apps := []deltalog.App{{ID: "a", Version: 10}, {ID: "b", Version: 20}}
	cases := []struct {
		name    string
		winners []deltalog.Commit
		want    deltalog.Resolution
		version int64
	}{
		{"others", []deltalog.Commit{commit(5, `{"txn":{"appId":"c","version":99}}`)}, deltalog.ResolutionRetry, 5},
		{"all covered over two winners", []deltalog.Commit{commit(5, `{"txn":{"appId":"a","version":10}}`),
			commit(6, `{"txn":{"appId":"b","version":21}}`)}, deltalog.ResolutionAlreadyCommitted, 6},
		{"one covered", []deltalog.Commit{commit(5, `{"txn":{"appId":"b","version":20}}`)}, deltalog.ResolutionAbort, 5},
		{"one older", []deltalog.Commit{commit(5, `{"txn":{"appId":"a","version":10}}`, `{"txn":{"appId":"b","version":19}}`)}, deltalog.ResolutionAbort, 5},
		{"ours", []deltalog.Commit{commit(5, `{"commitInfo":{"txnId":"mine"}}`)}, deltalog.ResolutionCommitted, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := deltalog.ResolveGroupConflict(apps, "mine", c.winners)
			if res.Resolution != c.want || res.Version != c.version {
				t.Errorf("got %v at %d, want %v at %d (%v)", res.Resolution, res.Version, c.want, c.version, res.Err)
			}
			if c.want == deltalog.ResolutionAbort && !errors.Is(res.Err, deltalog.ErrConcurrentModification) {
				t.Errorf("abort error %v, want ErrConcurrentModification", res.Err)
			}
		})
	}
}
