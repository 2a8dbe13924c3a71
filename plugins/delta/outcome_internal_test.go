package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Each answer CommitAppend can give is decided once: landed (OK), not
// landed or unknown (RETRY). Only an error that proves no commit of ours is
// in the log is not landed (its data files are deleted); anything else may
// hide a commit the store took.
func TestCommitOutcome(t *testing.T) {
	ours := &deltalog.CommitResult{Version: 4, Attempts: 1}
	replayed := &deltalog.CommitResult{Version: 3, AlreadyCommitted: true, Attempts: 1}
	timeout := fmt.Errorf("deltalog: commit 5 outcome unknown: put: %w; read-back: %w", context.DeadlineExceeded, errors.New("connection reset"))
	for _, c := range []struct {
		name    string
		res     *deltalog.CommitResult
		err     error
		want    outcome
		already bool
	}{
		{"committed", ours, nil, landed, false},
		{"already committed by an earlier attempt", replayed, nil, landed, true},
		{"no result and no error", nil, nil, unknown, false},

		{"a winner changed the metaData", nil, &deltalog.ConcurrentModificationError{Version: 5, Action: "metaData"}, notLanded, false},
		{"a winner advanced our txn", nil, &deltalog.ConcurrentTxnError{Version: 5, AppID: "a", AppVersion: 7}, notLanded, false},
		{"the head moved", nil, &deltalog.StaleSnapshotError{Version: 4}, notLanded, false},
		{"the table was replaced", nil, &deltalog.TableReplacedError{OldID: "x", NewID: "y"}, notLanded, false},
		{"the table is gone", nil, fmt.Errorf("checking the log's head: %w", deltalog.ErrNoTable), notLanded, false},
		{"created elsewhere with another definition", nil, &deltalog.CreateConflictError{Existing: &deltalog.Snapshot{}, Detail: "columns differ"}, notLanded, false},
		{"created elsewhere with a refused feature", nil, &deltalog.UnsupportedFeatureError{Feature: "rowTracking"}, notLanded, false},

		{"put and read-back failed", nil, timeout, unknown, false},
		{"context cancelled", nil, context.Canceled, unknown, false},
		{"existing but reads as missing", nil, fmt.Errorf("deltalog: _delta_log/5.json reported existing but reads as missing: %w", deltalog.ErrAlreadyExists), unknown, false},
		{"a winner could not be read", nil, fmt.Errorf("reading commit 5: %w", deltalog.ErrNotFound), unknown, false},
		{"gave up on the race", nil, errors.New("deltalog: gave up after 20 commit attempts lost to concurrent writers"), unknown, false},
		{"landed but not applicable", nil, fmt.Errorf("%w: bad action", deltalog.ErrCorruptLog), unknown, false},
		{"marked FATAL below", nil, sdk.Fatal(errors.New("something below")), unknown, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := decide(c.res, c.err)
			if r.outcome != c.want || r.already != c.already {
				t.Fatalf("outcome %v already %v, want %v already %v", r.outcome, r.already, c.want, c.already)
			}
			answer := r.answer("file:///t")
			status := sdk.StatusOf(answer)
			if c.want == landed {
				if status != sdk.StatusOK || r.res != c.res {
					t.Fatalf("answer %v (%v), result %p: want OK with %p", status, answer, r.res, c.res)
				}
				return
			}
			if status != sdk.StatusRetry {
				t.Fatalf("answer %v (%v), want RETRY", status, answer)
			}
			if !strings.HasPrefix(answer.Error(), "Storage error: Failed to flush and commit to file:///t: ") {
				t.Errorf("message %q", answer)
			}
			if c.err != nil && !errors.Is(answer, c.err) {
				t.Errorf("answer %v does not wrap %v", answer, c.err)
			}
		})
	}
	// A result no one filled in is never OK.
	if s := sdk.StatusOf(commitResult{}.answer("file:///t")); s != sdk.StatusRetry {
		t.Errorf("zero result: %v, want RETRY", s)
	}
}

// lostCommitStore loses the answer to one commit put: the put fails, after
// storing the commit when land is set, and so does the read-back of the
// same path that follows, so the committer cannot tell whether it landed.
type lostCommitStore struct {
	*objstore.Local
	land bool

	mu       sync.Mutex
	armed    bool   // the next commit put is lost
	readBack string // the path whose next Get fails
}

func (s *lostCommitStore) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	s.mu.Lock()
	lose := s.armed && strings.HasPrefix(p, "_delta_log/") && strings.HasSuffix(p, ".json")
	if lose {
		s.armed, s.readBack = false, p
	}
	s.mu.Unlock()
	if !lose {
		return s.Local.PutIfAbsent(ctx, p, data)
	}
	if s.land {
		if err := s.Local.PutIfAbsent(ctx, p, data); err != nil {
			return err
		}
	}
	return errors.New("injected: connection reset before the answer")
}

func (s *lostCommitStore) Get(ctx context.Context, p string) ([]byte, error) {
	s.mu.Lock()
	fail := p == s.readBack
	if fail {
		s.readBack = ""
	}
	s.mu.Unlock()
	if fail {
		return nil, errors.New("injected: read-back failed")
	}
	return s.Local.Get(ctx, p)
}

// A commit whose outcome is unknown fails the batch with RETRY and leaves
// its data file in place; the redelivery finds the batch committed (when
// the commit landed: nothing written twice, no file of the table deleted)
// or commits it (when it did not): either way the table holds each record
// once and every file it names exists.
func TestUnknownCommitOutcomeIsRetriedWithoutLoss(t *testing.T) {
	for _, land := range []bool{true, false} {
		t.Run(fmt.Sprintf("landed=%v", land), func(t *testing.T) {
			local, _ := appendTable(t, 0) // version 0: id long
			root := strings.TrimPrefix(local.URI(), "file://")
			store := &lostCommitStore{Local: local, land: land}
			var sp spawner
			defer sp.wg.Wait()
			env := &tableEnv{
				open:  func(context.Context, objstore.Location) (objstore.Store, error) { return store, nil },
				log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
				spawn: sp.spawn,
				opts:  tableOptions{exactlyOnce: true},
				stats: &counters{}, ckpt: newCheckpointStats(), requests: &objstore.Requests{},
			}
			tb := newTable(local.URI(), env)
			defer tb.close()
			ctx := context.Background()
			tb.mu.Lock()
			err := tb.load(ctx, nil)
			tb.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			batch := func(attempt uint32) *sdk.Batch {
				b := &sdk.Batch{Topic: "t", Schema: sdk.SchemaJSON, Attempt: attempt}
				for i := range 3 {
					b.Records = append(b.Records, sdk.Record{Offset: uint64(10 + i), Payload: []byte(fmt.Sprintf(`{"id":%d}`, i))})
				}
				return b
			}

			store.mu.Lock()
			store.armed = true
			store.mu.Unlock()
			err = tb.write(ctx, batch(1), "app")
			if s := sdk.StatusOf(err); s != sdk.StatusRetry {
				t.Fatalf("first delivery: %v (%v), want RETRY", s, err)
			}
			data, _ := filepath.Glob(filepath.Join(root, "*.parquet"))
			if len(data) != 1 {
				t.Fatalf("data files after the lost commit: %v, want the batch's one file left in place", data)
			}

			if err := tb.write(ctx, batch(2), "app"); err != nil {
				t.Fatalf("redelivery: %v", err)
			}
			snap, err := deltalog.Load(ctx, local, nil)
			if err != nil {
				t.Fatal(err)
			}
			if done, _ := snap.TxnVersion("app"); snap.Version != 1 || done != 12 {
				t.Fatalf("table at version %d with txn %d: want one commit holding offsets up to 12", snap.Version, done)
			}
			c, err := deltalog.ReadCommit(ctx, local, 1)
			if err != nil {
				t.Fatal(err)
			}
			rows := 0
			for _, a := range c.Actions {
				add, ok := a.(*deltalog.Add)
				if !ok {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(add.Path))); err != nil {
					t.Errorf("the table names %s: %v", add.Path, err)
				}
				var st struct{ NumRecords int }
				if err := json.Unmarshal([]byte(add.Stats), &st); err != nil {
					t.Fatal(err)
				}
				rows += st.NumRecords
			}
			if rows != 3 {
				t.Errorf("the table holds %d rows, want 3", rows)
			}
			// Landed: the redelivery skipped the batch; not landed: it
			// committed it (the first attempt's file stays an orphan).
			skipped, commits := env.stats.skipped.Load(), env.stats.commits.Load()
			if land && (skipped != 3 || commits != 0) || !land && (skipped != 0 || commits != 1) {
				t.Errorf("skipped %d, commits %d", skipped, commits)
			}
		})
	}
}
