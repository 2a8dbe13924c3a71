package deltalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Compaction commits: files rewritten into fewer, larger ones, the table's
// rows unchanged (PROTOCOL.md "Add File and Remove File": dataChange =
// false marks an action that only rearranges data, so streaming readers
// skip it). One commit removes the files read and adds the files written.
//
// Unlike a blind append, a compaction read data: the files it removes.
// Decisions, as Delta-Spark's OPTIMIZE (WriteSerializable):
//
//   - a winner that removed (or re-added, with a deletion vector) any file
//     the compaction read aborts it: those rows were deleted or rewritten,
//     and committing would bring them back. Never a blind retry; the
//     caller deletes its new files;
//   - a winner that changed protocol or metaData aborts it, as for an
//     append (the new files were written against the old definition);
//   - winning appends, txn actions, and removes of other files do not
//     matter: retry at the next version. Conversely, ResolveConflict never
//     lets a compaction's dataChange=false removes fail an append, which
//     read no file.
//
// delta.appendOnly: PROTOCOL.md "Append-only Tables" — new log entries
// must not change or remove data, but may rearrange it ("add and remove
// actions where dataChange=false"). A compaction commit has only such
// actions, so it is allowed on append-only tables, as Spark allows
// OPTIMIZE there (it checks appendOnly only for removes with dataChange).

// Compaction describes one compaction commit.
type Compaction struct {
	// Removed are the live files read, as the snapshot lists them (State.Files).
	Removed []*Add
	// Added are the files written from them.
	Added []DataFile
	// EngineInfo for commitInfo; default DefaultEngineInfo.
	EngineInfo string
	// TxnID identifies the commit (commitInfo.txnId); generated when empty.
	TxnID string
	// Now is the commit time: deletionTimestamp of the removes and the
	// adds' default modificationTime. Zero means time.Now().
	Now time.Time
}

// ErrCompactionConflict is matched by *CompactionConflictError.
var ErrCompactionConflict = errors.New("deltalog: a concurrent commit removed a file the compaction read")

// CompactionConflictError names the winning commit that removed a file the
// compaction read.
type CompactionConflictError struct {
	Version int64
	Path    string
}

func (e *CompactionConflictError) Error() string {
	return fmt.Sprintf("deltalog: concurrent commit %d removed or replaced %s, which the compaction read; the compaction is abandoned", e.Version, e.Path)
}

func (e *CompactionConflictError) Unwrap() error { return ErrCompactionConflict }

// PrepareCompaction builds the commit file for version s.Version+1:
// commitInfo (operation OPTIMIZE), a remove per file read and an add per
// file written, all with dataChange = false. Each remove carries the
// removed file's size, partition values, stats and tags with
// extendedFileMetadata = true, so readers of its tombstone (VACUUM, CDF)
// need not look the add up.
func PrepareCompaction(s *Snapshot, c Compaction) (*PreparedCommit, error) {
	if err := s.Writable(); err != nil {
		return nil, err
	}
	if s.IsNew() {
		return nil, errors.New("deltalog: a compaction needs an existing table")
	}
	if len(c.Removed) == 0 || len(c.Added) == 0 {
		return nil, errors.New("deltalog: a compaction removes and adds at least one file")
	}
	now, txnID, engine := commitDefaults(c.Now, c.TxnID, c.EngineInfo)
	readVersion := s.Version
	info := &CommitInfo{
		Operation:           "OPTIMIZE",
		OperationParameters: map[string]any{"predicate": "[]", "zOrderBy": "[]", "auto": true},
		ReadVersion:         &readVersion,
		IsolationLevel:      "SnapshotIsolation",
		IsBlindAppend:       new(bool),
		EngineInfo:          engine,
		TxnID:               txnID,
	}
	ict := stampCommitInfo(s, info, now)
	ts := *info.Timestamp

	actions := make([]Action, 0, 1+len(c.Removed)+len(c.Added))
	actions = append(actions, info)
	seen := make(map[string]bool, len(c.Removed)+len(c.Added))
	for _, a := range c.Removed {
		if len(a.DeletionVector) > 0 || a.BaseRowID != nil {
			// Its rows are not the file's rows (deletion vector), or carry
			// ids a rewrite must keep (row tracking): not ours to rewrite.
			return nil, fmt.Errorf("deltalog: %s has a deletion vector or row ids; a compaction cannot rewrite it", a.Path)
		}
		if seen[a.Path] {
			return nil, fmt.Errorf("deltalog: file %q is removed twice", a.Path)
		}
		seen[a.Path] = true
		size, ext, del := a.Size, true, ts
		actions = append(actions, &Remove{Path: a.Path, DeletionTimestamp: &del, DataChange: false,
			ExtendedFileMetadata: &ext, PartitionValues: a.PartitionValues, Size: &size, Stats: a.Stats, Tags: a.Tags})
	}
	actions, err := appendAdds(actions, s, seen, c.Added, now, false)
	if err != nil {
		return nil, err
	}
	return prepared(s, actions, txnID, ict)
}

// ResolveCompactionConflict decides what a pending compaction that read
// the files in read (by add.path) does after losing a race to winners
// (ascending, contiguous). See the file comment.
func ResolveCompactionConflict(read map[string]bool, txnID string, winners []Commit) ConflictResult {
	r, _ := walkWinners(winners, txnID, func(version int64, a Action) (ConflictResult, bool) {
		var path string
		switch a := a.(type) {
		case *Remove:
			path = a.Path
		case *Add:
			path = a.Path
		}
		if path != "" && read[path] {
			return ConflictResult{Resolution: ResolutionAbort, Version: version,
				Err: &CompactionConflictError{Version: version, Path: path}}, true
		}
		return ConflictResult{}, false
	})
	return r
}

// CommitCompaction commits c on top of s, the snapshot at which c.Removed
// were live: it checks the head (VerifyHead), reads by name every commit
// made since s, and puts the commit at the next free version, retrying
// after winners that leave the files read alone. It returns an error
// matching ErrCompactionConflict when a winner removed one of them, and
// one matching ErrConcurrentModification when a winner changed protocol or
// metadata (or the snapshot is stale). On any error but a
// *CompactionUnknownError nothing was committed and the caller deletes the
// files it wrote.
// opts.SkipCatchUp is ignored: a compaction must see every commit since s.
func CommitCompaction(ctx context.Context, store Store, s *Snapshot, c Compaction, opts *CommitOptions) (*CommitResult, error) {
	maxAttempts, lost, _ := opts.loop()
	if c.TxnID == "" {
		c.TxnID = NewUUID()
	}
	if c.Now.IsZero() {
		c.Now = time.Now()
	}
	read := make(map[string]bool, len(c.Removed))
	for _, a := range c.Removed {
		read[a.Path] = true
	}
	winners, err := catchUp(ctx, store, s)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if len(winners) > 0 {
			if err := sameTable(s, winners); err != nil {
				return nil, err
			}
			res := ResolveCompactionConflict(read, c.TxnID, winners)
			switch res.Resolution {
			case ResolutionCommitted:
				return &CommitResult{Version: res.Version, TxnID: c.TxnID, Attempts: attempt}, nil
			case ResolutionAbort:
				return nil, res.Err
			}
			for _, w := range winners {
				if s, err = s.Apply(w.Version, w.Actions); err != nil {
					return nil, err
				}
				s.withHead(w.Data)
			}
		}
		if attempt > maxAttempts {
			return nil, fmt.Errorf("deltalog: compaction gave up after %d commit attempts lost to concurrent writers: %w",
				maxAttempts, ErrCompactionConflict)
		}
		pc, err := PrepareCompaction(s, c)
		if err != nil {
			return nil, err
		}
		outcome, first, err := putCommit(ctx, store, pc)
		switch outcome {
		case Committed:
			res, err := landed(s, pc, attempt)
			if err != nil {
				// It is in the log: its files are referenced.
				return nil, &CompactionUnknownError{Err: err}
			}
			return res, nil
		case Retryable:
			// The version was free when read back, but a put that failed
			// (a timeout, a 5xx) may still land after that, as the append
			// path assumes too (outcome.go's decide): keep the files.
			return nil, &CompactionUnknownError{Err: err}
		case Conflict:
			lost(pc.Version)
			if winners, err = readWinners(ctx, store, pc.Version, first); err != nil {
				return nil, err
			}
		default:
			return nil, &CompactionUnknownError{Err: err}
		}
	}
}

// CompactionUnknownError is a compaction commit whose put failed in a way
// that may have landed it, or that landed but could not be followed: the
// files it added must be kept (at worst orphans, left for VACUUM). Every
// other error of CommitCompaction means nothing was committed.
type CompactionUnknownError struct{ Err error }

func (e *CompactionUnknownError) Error() string {
	return "deltalog: compaction commit outcome unknown: " + e.Err.Error()
}
func (e *CompactionUnknownError) Unwrap() error { return e.Err }

// FilePath is the inverse of AddPath: the store path (relative to the
// table root, unescaped) of a file an add.path names. An absolute URI (a
// shallow clone's file outside the table) is an error.
func FilePath(addPath string) (string, error) {
	if strings.Contains(addPath, "://") || strings.HasPrefix(addPath, "/") {
		return "", fmt.Errorf("deltalog: %q is not a path relative to the table root", addPath)
	}
	p, err := pathUnescape(addPath)
	if err != nil {
		return "", fmt.Errorf("deltalog: add path %q: %w", addPath, err)
	}
	return p, nil
}
