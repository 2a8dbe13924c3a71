package deltalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

// putRacer lets another writer commit right before a put (on any Store,
// where racingStore wraps a MemStore): before the
// first PutIfAbsent of a commit file it calls race once, with the version
// being put. The racing writer writes to the store underneath.
type putRacer struct {
	deltalog.Store
	once sync.Once
	race func(version int64)
}

func (r *putRacer) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	var v int64
	if _, err := fmt.Sscanf(path, deltalog.LogDir+"%020d.json", &v); err == nil && path == deltalog.CommitPath(v) {
		r.once.Do(func() { r.race(v) })
	}
	return r.Store.PutIfAbsent(ctx, path, data)
}

// peerAppend commits one file for app at version v of the table in store,
// as another writer does: its own snapshot, its own commit.
func peerAppend(t *testing.T, store deltalog.Store, app string, appVersion int64, file string) int64 {
	t.Helper()
	res, err := deltalog.CommitAppend(ctx, store, load(t, store), deltalog.AppendCommit{AppID: app, AppVersion: appVersion,
		Files: []deltalog.DataFile{dataFile(file, sp("a"))}}, nil)
	if err != nil {
		t.Fatalf("peer commit: %v", err)
	}
	return res.Version
}

// readBack is what delta-rs reads of a table directory: its version, every
// live file's path, and the application transactions asked for.
type readBack struct {
	Version int64            `json:"version"`
	Paths   []string         `json:"paths"`
	Txns    map[string]int64 `json:"txns"`
}

const readBackScript = `
import sys, json
from deltalake import DeltaTable
dt = DeltaTable(sys.argv[1])
paths = sorted(dt.get_add_actions(flatten=True).column("path").to_pylist())
txns = {a: dt.transaction_version(a) for a in sys.argv[2:]}
print(json.dumps({"version": dt.version(), "paths": paths, "txns": {a: v for a, v in txns.items() if v is not None}}))
`

func deltaRSReadBack(t *testing.T, dir string, apps ...string) readBack {
	t.Helper()
	out := pyenv.Run(t, readBackScript, append([]string{dir}, apps...)...)
	var rb readBack
	if err := json.Unmarshal([]byte(out), &rb); err != nil {
		t.Fatalf("delta-rs read-back %q: %v", out, err)
	}
	return rb
}

// A writer that lands between our catch-up and our put makes the put
// lose; the lost race is resolved by the conflict rules as before: a blind
// append by another application is read and the commit goes again on top
// of it, a commit of our own batch ends ours as already committed, a
// schema change aborts it. delta-rs reads each file exactly once and each
// application transaction at its version.
func TestRacingWriterBetweenCatchUpAndPut(t *testing.T) {
	cases := []struct {
		name string
		// race is the racing writer's commit at version v.
		race func(t *testing.T, store deltalog.Store, v int64)
		// what delta-rs must read afterwards, and our commit's result.
		wantVersion   int64
		wantPaths     []string
		wantTxns      map[string]int64
		wantAlready   bool
		wantErr       error
		wantResultVer int64
	}{
		{
			name:        "blind append of another application",
			race:        func(t *testing.T, s deltalog.Store, v int64) { peerAppend(t, s, "peer", 2, "peer-2.parquet") },
			wantVersion: 3, wantResultVer: 3,
			wantPaths: []string{"p=a/ours.parquet", "p=a/peer-1.parquet", "p=a/peer-2.parquet"},
			wantTxns:  map[string]int64{"us": 7, "peer": 2},
		},
		{
			name: "our own batch, committed by another attempt",
			race: func(t *testing.T, s deltalog.Store, v int64) {
				peerAppend(t, s, "us", 7, "ours-other-attempt.parquet")
			},
			wantVersion: 2, wantResultVer: 2, wantAlready: true,
			wantPaths: []string{"p=a/ours-other-attempt.parquet", "p=a/peer-1.parquet"},
			wantTxns:  map[string]int64{"us": 7, "peer": 1},
		},
		{
			name: "schema change",
			race: func(t *testing.T, s deltalog.Store, v int64) {
				if err := s.PutIfAbsent(ctx, deltalog.CommitPath(v), []byte(metaDataLine(`{"k":"v"}`)+"\n")); err != nil {
					t.Fatal(err)
				}
			},
			wantVersion: 2, wantErr: deltalog.ErrConcurrentModification,
			wantPaths: []string{"p=a/peer-1.parquet"},
			wantTxns:  map[string]int64{"peer": 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			local, err := objstore.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := local.PutIfAbsent(ctx, deltalog.CommitPath(0), []byte(protocolLine+"\n"+metaDataLine("")+"\n")); err != nil {
				t.Fatal(err)
			}
			snap := load(t, local)
			// Another writer commits after our snapshot: the catch-up reads
			// it, and our put goes at 2, where the racer lands first.
			peerAppend(t, local, "peer", 1, "peer-1.parquet")
			var raced []int64
			store := &putRacer{Store: local, race: func(v int64) { raced = append(raced, v); c.race(t, local, v) }}
			var lost []int64
			res, err := deltalog.CommitAppend(ctx, store, snap, deltalog.AppendCommit{AppID: "us", AppVersion: 7,
				Files: []deltalog.DataFile{dataFile("ours.parquet", sp("a"))}},
				&deltalog.CommitOptions{LostRace: func(v int64) { lost = append(lost, v) }})
			if !slices.Equal(raced, []int64{2}) || !slices.Equal(lost, []int64{2}) {
				t.Errorf("racer landed at %v, races lost at %v; want both at [2]", raced, lost)
			}
			switch {
			case c.wantErr != nil:
				if !errors.Is(err, c.wantErr) {
					t.Errorf("commit: %+v, %v; want %v", res, err, c.wantErr)
				}
			case err != nil:
				t.Fatalf("commit: %v", err)
			case res.Version != c.wantResultVer || res.AlreadyCommitted != c.wantAlready:
				t.Errorf("commit at %d (already %v), want %d (already %v)", res.Version, res.AlreadyCommitted, c.wantResultVer, c.wantAlready)
			}
			got := deltaRSReadBack(t, dir, "us", "peer")
			if got.Version != c.wantVersion || !slices.Equal(got.Paths, c.wantPaths) || fmt.Sprint(got.Txns) != fmt.Sprint(c.wantTxns) {
				t.Errorf("delta-rs reads %+v, want version %d, files %v, txns %v", got, c.wantVersion, c.wantPaths, c.wantTxns)
			}
		})
	}
}
