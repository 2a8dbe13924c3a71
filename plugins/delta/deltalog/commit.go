package deltalog

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"
)

// DefaultEngineInfo is written to commitInfo.engineInfo when the caller
// names no engine.
const DefaultEngineInfo = "picomq-delta-sink/dev"

// DataFile is one Parquet file the caller has written for a commit.
type DataFile struct {
	// Path is the file's location relative to the table root exactly as
	// stored (PartitionDir + file name, not URI-encoded); PrepareAppend
	// encodes it for add.path.
	Path string
	// PartitionValues has an entry for every partition column (nil = null),
	// from SerializePartitionValue.
	PartitionValues PartitionValues
	Size            int64
	// ModificationTime in ms since the epoch; 0 means the commit time.
	ModificationTime int64
	// Stats is the add.stats JSON (StatsCollector.JSON), "" for none.
	Stats string
	Tags  map[string]string
}

// AppendCommit describes one blind append: the files, and optionally the
// application transaction that makes it exactly-once.
type AppendCommit struct {
	Files []DataFile
	// AppID and AppVersion become a txn action when AppID is set. A commit
	// is skipped as already done when the table already records AppVersion
	// (or a later one) for AppID.
	AppID      string
	AppVersion int64
	// EngineInfo for commitInfo; default DefaultEngineInfo.
	EngineInfo string
	// TxnID identifies the commit in commitInfo.txnId; generated when
	// empty. Keep it across attempts of the same commit so a read-back after
	// an ambiguous failure recognises any attempt (see IsOurCommit).
	TxnID string
	// Now is the time of the commit attempt; zero means time.Now().
	Now time.Time
}

// PreparedCommit is a commit file ready for PutIfAbsent.
type PreparedCommit struct {
	Version int64
	Path    string // CommitPath(Version)
	Data    []byte
	TxnID   string
	// InCommitTimestamp is the commit's inCommitTimestamp, 0 when the table
	// does not use in-commit timestamps.
	InCommitTimestamp int64
	Actions           []Action
}

// AlreadyCommittedError reports that the table already records the
// application transaction: the batch was committed before (by this writer
// in an earlier life, or by another one). It is a result, not a failure.
type AlreadyCommittedError struct {
	AppID            string
	Version          int64 // the version we wanted to commit
	CommittedVersion int64 // the version the table records for AppID
	TableVersion     int64 // table version that shows it
}

func (e *AlreadyCommittedError) Error() string {
	return fmt.Sprintf("deltalog: app %q version %d already committed (table version %d records %d)",
		e.AppID, e.Version, e.TableVersion, e.CommittedVersion)
}

// ErrAlreadyCommitted is matched by *AlreadyCommittedError.
var ErrAlreadyCommitted = errors.New("deltalog: application transaction already committed")

func (e *AlreadyCommittedError) Is(target error) bool { return target == ErrAlreadyCommitted }

// PrepareAppend builds the commit file for version s.Version+1 that appends
// c.Files: commitInfo first (required first when in-commit timestamps are
// on), then the txn action, then one add per file.
func PrepareAppend(s *Snapshot, c AppendCommit) (*PreparedCommit, error) {
	if err := s.Writable(); err != nil {
		return nil, err
	}
	if c.AppID != "" {
		if v, ok := s.TxnVersion(c.AppID); ok && v >= c.AppVersion {
			return nil, &AlreadyCommittedError{AppID: c.AppID, Version: c.AppVersion, CommittedVersion: v, TableVersion: s.Version}
		}
	}
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	txnID := c.TxnID
	if txnID == "" {
		txnID = NewUUID()
	}
	engine := c.EngineInfo
	if engine == "" {
		engine = DefaultEngineInfo
	}

	ts := now.UnixMilli()
	readVersion := s.Version
	info := &CommitInfo{
		Operation:           "WRITE",
		OperationParameters: map[string]any{"mode": "Append"},
		ReadVersion:         &readVersion,
		IsBlindAppend:       new(bool),
		EngineInfo:          engine,
		TxnID:               txnID,
	}
	*info.IsBlindAppend = true
	var ict int64
	if s.InCommitTimestampEnabled() {
		ict = s.NextInCommitTimestamp(now)
		info.InCommitTimestamp = &ict
		ts = ict // readers show the ICT as the commit time; keep both equal
	}
	info.Timestamp = &ts

	actions := []Action{info}
	if c.AppID != "" {
		lu := now.UnixMilli()
		actions = append(actions, &Txn{AppID: c.AppID, Version: c.AppVersion, LastUpdated: &lu})
	}
	seen := make(map[string]bool, len(c.Files))
	for i, f := range c.Files {
		if err := validateDataFile(s, f); err != nil {
			return nil, fmt.Errorf("deltalog: file %d (%q): %w", i, f.Path, err)
		}
		p := AddPath(f.Path)
		if seen[p] {
			return nil, fmt.Errorf("deltalog: file %q appears twice in the commit", f.Path)
		}
		seen[p] = true
		mt := f.ModificationTime
		if mt == 0 {
			mt = now.UnixMilli()
		}
		pv := f.PartitionValues
		if pv == nil {
			pv = PartitionValues{}
		}
		actions = append(actions, &Add{
			Path:             p,
			PartitionValues:  pv,
			Size:             f.Size,
			ModificationTime: mt,
			DataChange:       true,
			Stats:            f.Stats,
			Tags:             f.Tags,
		})
	}
	data, err := EncodeActions(actions)
	if err != nil {
		return nil, err
	}
	v := s.Version + 1
	return &PreparedCommit{Version: v, Path: CommitPath(v), Data: data, TxnID: txnID, InCommitTimestamp: ict, Actions: actions}, nil
}

func validateDataFile(s *Snapshot, f DataFile) error {
	switch {
	case f.Path == "":
		return errors.New("empty path")
	case strings.HasPrefix(f.Path, "/") || strings.Contains(f.Path, "://"):
		return errors.New("path must be relative to the table root")
	case strings.HasPrefix(f.Path, "_") || strings.HasPrefix(f.Path, "."):
		return errors.New("data files must not live in hidden (_ or .) directories")
	case f.Size < 0:
		return errors.New("negative size")
	}
	for _, seg := range strings.Split(f.Path, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return errors.New("path has an empty, . or .. segment")
		}
	}
	for _, col := range s.PartitionColumns {
		if _, ok := f.PartitionValues[col]; !ok {
			return fmt.Errorf("no value for partition column %q", col)
		}
	}
	for col := range f.PartitionValues {
		if !containsString(s.PartitionColumns, col) {
			return fmt.Errorf("%q is not a partition column", col)
		}
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// NewUUID returns a random (version 4) UUID string.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hexd = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexd[x>>4], hexd[x&15])
	}
	return string(out)
}

// ---- Committing ----------------------------------------------------------

// CommitOutcome is what one PutCommit attempt established.
type CommitOutcome int

const (
	// Committed: the prepared commit is the table's version Version.
	Committed CommitOutcome = iota + 1
	// Conflict: another writer committed that version first; read the
	// winners, ResolveConflict, and retry at the next version.
	Conflict
	// Retryable: the write failed and the version is still free; the same
	// prepared commit may be put again.
	Retryable
)

func (o CommitOutcome) String() string {
	switch o {
	case Committed:
		return "committed"
	case Conflict:
		return "conflict"
	case Retryable:
		return "retryable"
	}
	return "unknown"
}

// PutCommit writes a prepared commit with PutIfAbsent and classifies the
// result. When the put fails ambiguously (an error other than "already
// exists" — a timeout may still have landed the object) it reads the
// version back: our txnId there means Committed, another means Conflict,
// nothing means Retryable (with the put error). If even the read-back
// fails, the outcome is unknown and the error is returned with outcome 0;
// the caller must reload the snapshot — the txn action keeps a retry
// exactly-once.
func PutCommit(ctx context.Context, store Store, pc *PreparedCommit) (CommitOutcome, error) {
	err := store.PutIfAbsent(ctx, pc.Path, pc.Data)
	if err == nil {
		return Committed, nil
	}
	putErr := err
	data, err := store.Get(ctx, pc.Path)
	switch {
	case err == nil && IsOurCommit(data, pc.TxnID):
		return Committed, nil
	case err == nil:
		return Conflict, nil
	case errors.Is(err, ErrNotFound) && !errors.Is(putErr, ErrAlreadyExists):
		return Retryable, putErr
	case errors.Is(err, ErrNotFound):
		// "Exists" but unreadable as missing: eventual consistency.
		return 0, fmt.Errorf("deltalog: %s reported existing but reads as missing: %w", pc.Path, putErr)
	default:
		return 0, fmt.Errorf("deltalog: commit %d outcome unknown: put: %w; read-back: %w", pc.Version, putErr, err)
	}
}

// CommitOptions tunes CommitAppend.
type CommitOptions struct {
	// MaxAttempts bounds conflict retries (default 20).
	MaxAttempts int
	// Backoff is the pause before retry n (1-based) after a lost race.
	// Default: full jitter over 10 ms × 2^(n-1), capped at 1 s, so writers
	// that collided once do not collide again in lockstep.
	Backoff func(n int) time.Duration
}

func defaultBackoff(n int) time.Duration {
	ceiling := min(10*time.Millisecond<<min(n-1, 10), time.Second)
	return time.Duration(mrand.Int64N(int64(ceiling) + 1))
}

// CommitResult is the outcome of CommitAppend.
type CommitResult struct {
	// Version is the table version holding the batch: the new commit, or the
	// commit that recorded the application transaction before us.
	Version int64
	TxnID   string
	// AlreadyCommitted is set when nothing was written because the table
	// already records AppID at AppVersion or later.
	AlreadyCommitted bool
	// Snapshot is the table state at Version (after our commit).
	Snapshot *Snapshot
	Attempts int
}

// CommitAppend commits c on top of s with optimistic concurrency: prepare,
// put-if-absent, and on a lost race read the winning commits, resolve, and
// retry at the next version. It returns an error wrapping
// ErrConcurrentModification when a winner changed protocol or metadata
// (the files were written against a schema that may no longer hold).
// Transient storage errors are returned as they are; nothing is retried
// with a delay here — retry policy belongs to the caller.
func CommitAppend(ctx context.Context, store Store, s *Snapshot, c AppendCommit, opts *CommitOptions) (*CommitResult, error) {
	maxAttempts, backoff := 20, defaultBackoff
	if opts != nil && opts.MaxAttempts > 0 {
		maxAttempts = opts.MaxAttempts
	}
	if opts != nil && opts.Backoff != nil {
		backoff = opts.Backoff
	}
	if c.TxnID == "" {
		c.TxnID = NewUUID()
	}
	if c.Now.IsZero() {
		c.Now = time.Now()
	}
	// Version s.Version+1 may only be put on top of the commit s was read
	// from: after the table was deleted and created again it would land on
	// another table's log, past its end.
	fresh, err := s.VerifyHead(ctx, store)
	if err != nil {
		return nil, err
	}
	if fresh != nil {
		return nil, &StaleSnapshotError{Version: s.Version}
	}
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		pc, err := PrepareAppend(s, c)
		var already *AlreadyCommittedError
		if errors.As(err, &already) {
			return &CommitResult{Version: s.Version, TxnID: c.TxnID, AlreadyCommitted: true, Snapshot: s, Attempts: attempt}, nil
		}
		if err != nil {
			return nil, err
		}
		outcome, err := PutCommit(ctx, store, pc)
		switch outcome {
		case Committed:
			next, err := s.Apply(pc.Version, pc.Actions)
			if err != nil {
				return nil, err
			}
			return &CommitResult{Version: pc.Version, TxnID: pc.TxnID, Snapshot: next.withHead(pc.Data), Attempts: attempt}, nil
		case Retryable:
			return nil, err
		case Conflict:
			winners, err := ReadCommits(ctx, store, s.Version+1)
			if err != nil {
				return nil, err
			}
			if err := sameTable(s, winners); err != nil {
				return nil, err
			}
			res := ResolveConflict(c.AppID, c.AppVersion, c.TxnID, winners)
			for _, w := range winners {
				if w.Version > res.Version && res.Resolution != ResolutionRetry {
					break
				}
				if s, err = s.Apply(w.Version, w.Actions); err != nil {
					return nil, err
				}
				s.withHead(w.Data)
			}
			switch res.Resolution {
			case ResolutionCommitted:
				return &CommitResult{Version: res.Version, TxnID: c.TxnID, Snapshot: s, Attempts: attempt}, nil
			case ResolutionAlreadyCommitted:
				return &CommitResult{Version: res.Version, TxnID: c.TxnID, AlreadyCommitted: true, Snapshot: s, Attempts: attempt}, nil
			case ResolutionAbort:
				return nil, res.Err
			}
			// ResolutionRetry: s now includes the winners; go again after a
			// pause. The clock moves on so lastUpdated and the ICT stay
			// truthful.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(backoff(attempt)):
			}
			c.Now = time.Now()
		default:
			return nil, err
		}
	}
	return nil, fmt.Errorf("deltalog: gave up after %d commit attempts lost to concurrent writers", maxAttempts)
}

// Commit is one commit file read from the log.
type Commit struct {
	Version int64
	Actions []Action
	Data    []byte // the file as read
}

func parseCommit(v int64, data []byte) (Commit, error) {
	actions, err := ParseActions(data)
	if err != nil {
		return Commit{}, fmt.Errorf("%w: %s: %w", ErrCorruptLog, CommitPath(v), err)
	}
	return Commit{Version: v, Actions: actions, Data: data}, nil
}

// ReadCommits reads the contiguous commits from version from onward (the
// ones that won a race), in order.
func ReadCommits(ctx context.Context, store Store, from int64) ([]Commit, error) {
	files, err := store.List(ctx, LogDir, versionPrefix(from))
	if err != nil {
		return nil, err
	}
	var out []Commit
	next := from
	for _, fi := range files {
		lf, ok := parseLogFile(fi)
		if !ok || lf.kind != fileCommit {
			continue
		}
		if lf.version != next {
			return nil, &LogGapError{Missing: next, Latest: lf.version}
		}
		data, err := store.Get(ctx, lf.Path)
		if err != nil {
			return nil, err
		}
		c, err := parseCommit(lf.version, data)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		next++
	}
	return out, nil
}

// sameTable checks that no winner carries another table's metaData.id: a
// table created anew at the same location is not a concurrent append.
func sameTable(s *Snapshot, winners []Commit) error {
	for _, w := range winners {
		for _, a := range w.Actions {
			if md, ok := a.(*Metadata); ok && md.ID != s.Metadata.ID {
				return &TableReplacedError{OldID: s.Metadata.ID, OldVersion: s.Version, NewID: md.ID, NewVersion: w.Version}
			}
		}
	}
	return nil
}
