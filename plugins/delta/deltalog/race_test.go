package deltalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

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

// hidingStore answers not-found for the first read of each path in hide:
// a commit file that is slow to show, or, with always set, one that is
// missing for good.
type hidingStore struct {
	deltalog.Store
	mu     sync.Mutex
	hide   map[string]bool
	always bool
}

func (h *hidingStore) Get(ctx context.Context, path string) ([]byte, error) {
	h.mu.Lock()
	hidden := h.hide[path]
	if !h.always {
		delete(h.hide, path)
	}
	h.mu.Unlock()
	if hidden {
		return nil, fmt.Errorf("hidden %s: %w", path, deltalog.ErrNotFound)
	}
	return h.Store.Get(ctx, path)
}

// The catch-up reads names a round at a time; a name that reads as
// missing while a later name of the same round is there was taken
// meanwhile: it is read again, not put at (which would lose a race), and
// one that stays missing is a gap in the log, never filled by our commit.
func TestCatchUpRereadsANameALaterOneShowsTaken(t *testing.T) {
	setup := func(t *testing.T) (*deltalog.MemStore, *deltalog.Snapshot) {
		mem := newTable(t)
		snap := load(t, mem)
		for v := int64(1); v <= 3; v++ {
			peerAppend(t, mem, "peer", v, fmt.Sprintf("peer-%d.parquet", v))
		}
		return mem, snap
	}
	t.Run("slow to show", func(t *testing.T) {
		mem, snap := setup(t)
		store := &hidingStore{Store: mem, hide: map[string]bool{deltalog.CommitPath(2): true}}
		var lost []int64
		res, err := deltalog.CommitAppend(ctx, store, snap, withPartition(appendOf("us", 1, "ours.parquet")),
			&deltalog.CommitOptions{LostRace: func(v int64) { lost = append(lost, v) }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Version != 4 || res.Attempts != 1 || len(lost) != 0 {
			t.Errorf("committed at %d in %d attempts, races lost at %v; want 4 in 1, none", res.Version, res.Attempts, lost)
		}
		after := load(t, mem)
		if v, _ := after.TxnVersion("peer"); v != 3 || after.Version != 4 {
			t.Errorf("table at %d with peer at %d, want 4 and 3", after.Version, v)
		}
	})
	t.Run("missing for good", func(t *testing.T) {
		mem, snap := setup(t)
		store := &hidingStore{Store: mem, hide: map[string]bool{deltalog.CommitPath(2): true}, always: true}
		_, err := deltalog.CommitAppend(ctx, store, snap, withPartition(appendOf("us", 1, "ours.parquet")), nil)
		var gap *deltalog.LogGapError
		if !errors.As(err, &gap) || gap.Missing != 2 || gap.Latest != 3 {
			t.Fatalf("commit over a gap: %v, want a LogGapError at 2 (latest 3)", err)
		}
		if _, err := mem.Get(ctx, deltalog.CommitPath(4)); !errors.Is(err, deltalog.ErrNotFound) {
			t.Errorf("version 4 written over a gap: %v", err)
		}
	})
}

// meetingStore holds the read of one path until the read of another has
// begun (or a second passed): it tells whether the two run at once.
type meetingStore struct {
	deltalog.Store
	wait, arrive string
	arrived      chan struct{}
	once         sync.Once
	met          bool
}

func (m *meetingStore) Get(ctx context.Context, path string) ([]byte, error) {
	switch path {
	case m.arrive:
		m.once.Do(func() { close(m.arrived) })
	case m.wait:
		select {
		case <-m.arrived:
			m.met = true
		case <-time.After(time.Second):
		}
	}
	return m.Store.Get(ctx, path)
}

// The head check and the catch-up's first read go out together: one round
// trip before the put, not two.
func TestCatchUpRunsAlongsideTheHeadCheck(t *testing.T) {
	mem := newTable(t)
	snap := load(t, mem)
	peerAppend(t, mem, "peer", 1, "peer-1.parquet")
	store := &meetingStore{Store: mem, wait: deltalog.CommitPath(0), arrive: deltalog.CommitPath(1), arrived: make(chan struct{})}
	res, err := deltalog.CommitAppend(ctx, store, snap, withPartition(appendOf("us", 1, "ours.parquet")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !store.met || res.Version != 2 || res.Attempts != 1 {
		t.Errorf("head check met the catch-up: %v; committed at %d in %d attempts, want 2 in 1", store.met, res.Version, res.Attempts)
	}
}
