package deltalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Merge commits: copy-on-write upserts and deletes by key (the sink's
// write_mode = "upsert"). The writer read the files that may hold the
// changed keys, wrote each file that held one anew without those rows, and
// wrote the new rows to new files. One commit removes the files rewritten
// (dataChange = true: rows changed), adds the files written, and records
// the application transactions, so a replay applies nothing twice.
//
// Unlike a blind append, a merge read data. After a lost race, as
// Delta-Spark's MERGE under WriteSerializable:
//
//   - a winner that removed a file the merge rewrote aborts it: the rows
//     it kept may be gone, or changed elsewhere;
//   - a winner that added a file with dataChange = true that may hold one
//     of the merge's keys (MayHold: by partition values and stats) aborts
//     it: its rows of those keys would survive the merge, or a delete
//     would miss them. Adds with dataChange = false (a compaction) only
//     rearrange rows of files they remove, so they matter only through
//     those removes;
//   - a winner that changed protocol or metaData aborts it, as for an
//     append; winners that record the merge's application transactions
//     decide as for a group append (ResolveGroupConflict);
//   - anything else (appends of other keys, removes of other files, txn
//     actions of other applications): retry at the next version.
//
// An abort is never retried blindly: the caller re-plans against the new
// snapshot (the error matches ErrConcurrentModification).

// Merge describes one merge commit.
type Merge struct {
	// Append holds the files written (new rows and rewritten survivors),
	// the application transactions, commitInfo extras and a schema change,
	// as for an append.
	Append AppendCommit
	// Removed are the live files rewritten, as the snapshot lists them.
	Removed []*Add
	// MayHold reports whether a file another writer added may hold one of
	// the merge's keys; nil: every file may.
	MayHold func(*Add) bool
}

// ErrMergeConflict is matched by *MergeConflictError.
var ErrMergeConflict = errors.New("deltalog: a concurrent commit changed rows the merge read")

// MergeConflictError names the winning commit and the file that made a
// merge re-plan. It matches ErrMergeConflict and ErrConcurrentModification.
type MergeConflictError struct {
	Version int64
	Path    string
	Added   bool // the winner added Path (else it removed it)
}

func (e *MergeConflictError) Error() string {
	what := "removed " + e.Path + ", which the merge rewrote"
	if e.Added {
		what = "added " + e.Path + ", which may hold keys the merge changes"
	}
	return fmt.Sprintf("deltalog: concurrent commit %d %s; the merge is planned again", e.Version, what)
}

func (e *MergeConflictError) Is(target error) bool {
	return target == ErrMergeConflict || target == ErrConcurrentModification
}

// PrepareMerge builds the commit file for version s.Version+1: the append
// of m.Append (commitInfo, txn actions, adds) with a remove per rewritten
// file, dataChange = true and the removed file's size, partition values,
// stats and tags (extendedFileMetadata), and commitInfo operation MERGE
// (WRITE when nothing is removed).
func PrepareMerge(s *Snapshot, m Merge) (*PreparedCommit, error) {
	if s.IsNew() {
		return nil, errors.New("deltalog: a merge needs an existing table")
	}
	if len(m.Removed) > 0 && s.Metadata.Configuration["delta.appendOnly"] == "true" {
		return nil, errors.New("deltalog: the table is append-only (delta.appendOnly): rows cannot be removed")
	}
	pc, err := PrepareAppend(s, m.Append)
	if err != nil {
		return nil, err
	}
	info, ok := pc.Actions[0].(*CommitInfo)
	if !ok {
		return nil, errors.New("deltalog: internal error: an append's first action is not commitInfo")
	}
	info.IsBlindAppend = new(bool)
	if len(m.Removed) > 0 {
		info.Operation = "MERGE"
		info.OperationParameters = map[string]any{"predicate": "[]", "matchedPredicates": "[]", "notMatchedPredicates": "[]"}
		info.IsolationLevel = "WriteSerializable"
	}
	ts := *info.Timestamp
	actions := slices.Clone(pc.Actions)
	at := slices.IndexFunc(actions, func(a Action) bool { _, ok := a.(*Add); return ok })
	if at < 0 {
		at = len(actions)
	}
	removes := make([]Action, 0, len(m.Removed))
	seen := map[string]bool{}
	for _, a := range actions[at:] {
		seen[a.(*Add).Path] = true
	}
	for _, a := range m.Removed {
		if len(a.DeletionVector) > 0 || a.BaseRowID != nil {
			return nil, fmt.Errorf("deltalog: %s has a deletion vector or row ids; a merge cannot rewrite it", a.Path)
		}
		if seen[a.Path] {
			return nil, fmt.Errorf("deltalog: file %q is removed twice, or removed and added", a.Path)
		}
		seen[a.Path] = true
		size, ext, del := a.Size, true, ts
		removes = append(removes, &Remove{Path: a.Path, DeletionTimestamp: &del, DataChange: true,
			ExtendedFileMetadata: &ext, PartitionValues: a.PartitionValues, Size: &size, Stats: a.Stats, Tags: a.Tags})
	}
	actions = slices.Insert(actions, at, removes...)
	return prepared(s, actions, pc.TxnID, pc.InCommitTimestamp)
}

// ResolveMergeConflict decides what a pending merge does after losing a
// race to winners (ascending, contiguous). See the file comment.
func ResolveMergeConflict(m *Merge, txnID string, winners []Commit) ConflictResult {
	if r := ResolveGroupConflict(m.Append.apps(), txnID, winners); r.Resolution != ResolutionRetry {
		return r
	}
	removed := make(map[string]bool, len(m.Removed))
	for _, a := range m.Removed {
		removed[a.Path] = true
	}
	r, _ := walkWinners(winners, txnID, func(version int64, a Action) (ConflictResult, bool) {
		switch a := a.(type) {
		case *Remove:
			if removed[a.Path] {
				return ConflictResult{Resolution: ResolutionAbort, Version: version,
					Err: &MergeConflictError{Version: version, Path: a.Path}}, true
			}
		case *Add:
			if removed[a.Path] || (a.DataChange && (m.MayHold == nil || m.MayHold(a))) {
				return ConflictResult{Resolution: ResolutionAbort, Version: version,
					Err: &MergeConflictError{Version: version, Path: a.Path, Added: true}}, true
			}
		}
		return ConflictResult{}, false
	})
	return r
}

// CommitMerge commits m on top of s, the snapshot at which m.Removed were
// live and the keys' files were chosen: it checks the head, reads by name
// every commit made since s, and puts the commit at the next free version,
// retrying after winners that leave what the merge read alone. A winner
// that recorded the merge's transactions gives an AlreadyCommitted result,
// as for an append. Errors are CommitAppend's, read the same way; one
// matching ErrConcurrentModification (ErrMergeConflict among them) means
// the merge must be planned again.
func CommitMerge(ctx context.Context, store Store, s *Snapshot, m Merge, opts *CommitOptions) (*CommitResult, error) {
	if m.Append.TxnID == "" {
		m.Append.TxnID = NewUUID()
	}
	if m.Append.Now.IsZero() {
		m.Append.Now = time.Now()
	}
	winners, err := catchUp(ctx, store, s)
	if err != nil {
		return nil, err
	}
	return commitLoop(ctx, store, s, winners, m.Append.TxnID, &m.Append.Now, opts, "merge", nil,
		func(winners []Commit) ConflictResult { return ResolveMergeConflict(&m, m.Append.TxnID, winners) },
		func(s *Snapshot) (*PreparedCommit, error) { return PrepareMerge(s, m) })
}
