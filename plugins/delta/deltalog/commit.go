package deltalog

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/shared/retry/backoff"
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
	// Apps are more application transactions, each its own txn action
	// after AppID's: a group commit holds the batches of several
	// applications (a sink's topic partitions), one txn each. The commit is
	// already done only when the table records every one of them (AppID's
	// too) at its version or later; when it records some but not all, the
	// commit is refused with a *ConcurrentTxnError: the batches must be
	// filtered again against the table.
	Apps []App
	// EngineInfo for commitInfo; default DefaultEngineInfo.
	EngineInfo string
	// TxnID identifies the commit in commitInfo.txnId; generated when
	// empty. Keep it across attempts of the same commit so a read-back after
	// an ambiguous failure recognises any attempt (see IsOurCommit).
	TxnID string
	// Now is the time of the commit attempt; zero means time.Now().
	Now time.Time
	// Info holds extra commitInfo keys, written as given. Keys commitInfo
	// already has (timestamp, operation, ...) are refused.
	Info map[string]json.RawMessage
	// Metadata, when set, is a new metaData action committed with the
	// files: a schema change that must land together with the data
	// written against it (WithColumns builds one). It must keep the
	// table's id and partition columns. A lost race to a winner that
	// changed the metadata or protocol aborts (ConflictResolution), since
	// ours was derived from the snapshot's.
	Metadata *Metadata
	// NoAdopt: the commit's content was planned against no table (an
	// upsert's rows, with no removes), so a table another writer created
	// meanwhile is never taken in its place, even one of the same
	// definition: the result matches ErrConcurrentModification and the
	// caller plans again against that table.
	NoAdopt bool
}

// App is one application transaction of a commit: a txn action's appId
// and version.
type App struct {
	ID      string
	Version int64
}

// apps is every application transaction of c, AppID's first.
func (c *AppendCommit) apps() []App {
	if c.AppID == "" {
		return c.Apps
	}
	return append([]App{{ID: c.AppID, Version: c.AppVersion}}, c.Apps...)
}

// checkApps compares apps with the transactions s records: nil when it
// records none of them at their versions, an *AlreadyCommittedError when
// it records all of them, a *ConcurrentTxnError when only some.
func checkApps(s *Snapshot, apps []App) error {
	var done *AlreadyCommittedError
	n := 0
	for _, a := range apps {
		if v, ok := s.TxnVersion(a.ID); ok && v >= a.Version {
			if done == nil {
				done = &AlreadyCommittedError{AppID: a.ID, Version: a.Version, CommittedVersion: v, TableVersion: s.Version}
			}
			n++
		}
	}
	switch {
	case n == 0:
		return nil
	case n == len(apps):
		return done
	}
	return &ConcurrentTxnError{Version: s.Version, AppID: done.AppID, AppVersion: done.CommittedVersion}
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
// on), then the txn actions (AppID's, then Apps'), then one add per file.
func PrepareAppend(s *Snapshot, c AppendCommit) (*PreparedCommit, error) {
	if err := s.Writable(); err != nil {
		return nil, err
	}
	apps := c.apps()
	if err := checkApps(s, apps); err != nil {
		return nil, err
	}
	now, txnID, engine := commitDefaults(c.Now, c.TxnID, c.EngineInfo)

	readVersion := s.Version
	info := &CommitInfo{
		Operation:           "WRITE",
		OperationParameters: map[string]any{"mode": "Append"},
		ReadVersion:         &readVersion,
		IsBlindAppend:       new(bool),
		EngineInfo:          engine,
		TxnID:               txnID,
	}
	// A commit that changes the schema is not a blind append.
	*info.IsBlindAppend = c.Metadata == nil
	for k, v := range c.Info {
		if slices.Contains(commitInfoKnown, k) {
			return nil, fmt.Errorf("deltalog: commitInfo key %q is the writer's own", k)
		}
		if info.Other == nil {
			info.Other = make(map[string]json.RawMessage, len(c.Info))
		}
		info.Other[k] = v
	}
	ict := stampCommitInfo(s, info, now)

	actions := []Action{info}
	if s.IsNew() {
		// Version 0 creates the table with the append (create.go), as
		// Spark's CREATE TABLE AS SELECT does.
		info.Operation = "CREATE TABLE AS SELECT"
		partitionBy, err := json.Marshal(s.PartitionColumns)
		if err != nil {
			return nil, err
		}
		info.OperationParameters = map[string]any{"isManaged": "false", "description": nil,
			"partitionBy": string(partitionBy), "properties": "{}"}
		info.ReadVersion = nil
		p := s.Protocol
		actions = append(actions, &p)
		if c.Metadata == nil {
			m := s.Metadata
			actions = append(actions, &m)
		}
	}
	if c.Metadata != nil {
		// A commit holds one metaData at most: a new table's columns added
		// by the append are in this one.
		if err := checkNewMetadata(s, c.Metadata); err != nil {
			return nil, err
		}
		actions = append(actions, c.Metadata)
	}
	for _, a := range apps {
		lu := now.UnixMilli()
		actions = append(actions, &Txn{AppID: a.ID, Version: a.Version, LastUpdated: &lu})
	}
	seen := make(map[string]bool, len(c.Files))
	actions, err := appendAdds(actions, s, seen, c.Files, now, true)
	if err != nil {
		return nil, err
	}
	return prepared(s, actions, txnID, ict)
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
	out, _, err := putCommit(ctx, store, pc)
	return out, err
}

// putCommit is PutCommit that also returns, on Conflict, the winning commit
// file it read back: the first of the winners the committer reads next.
func putCommit(ctx context.Context, store Store, pc *PreparedCommit) (CommitOutcome, []byte, error) {
	err := store.PutIfAbsent(ctx, pc.Path, pc.Data)
	if err == nil {
		return Committed, nil, nil
	}
	putErr := err
	var data []byte
	if errors.Is(putErr, ErrAlreadyExists) {
		// The store says the version is there: a not-found now is a store
		// that has not caught up, not an empty slot.
		data, err = getExisting(ctx, store, pc.Version)
	} else {
		data, err = store.Get(ctx, pc.Path)
	}
	switch {
	case err == nil && IsOurCommit(data, pc.TxnID):
		return Committed, nil, nil
	case err == nil:
		return Conflict, data, nil
	case errors.Is(err, ErrNotFound) && !errors.Is(putErr, ErrAlreadyExists):
		return Retryable, nil, putErr
	case errors.Is(err, ErrNotFound):
		return 0, nil, fmt.Errorf("deltalog: %s reported existing but reads as missing: %w", pc.Path, putErr)
	default:
		return 0, nil, fmt.Errorf("deltalog: commit %d outcome unknown: put: %w; read-back: %w", pc.Version, putErr, err)
	}
}

// getExisting reads the commit file of version v, which the store has just
// said exists (a put-if-absent lost to it, or a listing showed a later
// version). Some stores answer a read right after another client's write
// with not-found for a moment: read the name again, briefly, before
// calling it missing.
func getExisting(ctx context.Context, store Store, v int64) ([]byte, error) {
	wait := backoff.Exponential(2*time.Millisecond, 2, time.Second)
	for attempt := 1; ; attempt++ {
		data, err := store.Get(ctx, CommitPath(v))
		if !errors.Is(err, ErrNotFound) || attempt == 7 { // 6 waits, about 130 ms in all
			return data, err
		}
		if err := backoff.Sleep(ctx, wait(attempt)); err != nil {
			return nil, err
		}
	}
}

// CommitOptions tunes CommitAppend.
type CommitOptions struct {
	// MaxAttempts bounds conflict retries (default 20).
	MaxAttempts int
	// Backoff is the pause before retry n (1-based) after a lost race that
	// the winners do not invalidate. Default: none. The committer has just
	// read the winners and is current; a pause only lets the next winner
	// in (as Spark, which retries a blind append at once).
	Backoff func(n int) time.Duration
	// LostRace, when set, is called for every race lost to another commit
	// (version is the one we did not get), whatever the outcome.
	LostRace func(version int64)
	// SkipCatchUp leaves out the reads by name of the commits made since
	// the snapshot before the first put (a GET that answers not-found when
	// nobody else writes). A writer that has seen no other writer's commit
	// lately sets it; a lost race still reads the winners.
	SkipCatchUp bool
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
	// Actions are the actions of the commit this call wrote at Version, as
	// written; nil when it wrote none (AlreadyCommitted, or an earlier
	// attempt's commit was found). Read-only: the checkpointer folds them
	// into its state instead of reading the commit back.
	Actions []Action
}

// CommitAppend commits c on top of s with optimistic concurrency: check
// that the log still holds s's head (VerifyHead), read by name the commits made since s (unless
// SkipCatchUp), prepare, put-if-absent, and on a lost race read the winning
// commits by name, resolve, and retry at the next version at once. The log
// is never listed on this path: a listing taken while another writer
// commits can show a hole that is not there. It returns an error wrapping
// ErrConcurrentModification when a winner changed protocol or metadata
// (the files were written against a schema that may no longer hold), and a
// *TableReplacedError when the log belongs to another table now. On a new
// table (NewTable) there is no head to check: the log must still be empty,
// and a table found there or winning version 0 is taken in its place when
// its definition is ours, else the result is a *CreateConflictError
// (create.go). Transient storage errors are returned as they are; nothing is retried
// with a delay here — retry policy belongs to the caller.
func CommitAppend(ctx context.Context, store Store, s *Snapshot, c AppendCommit, opts *CommitOptions) (*CommitResult, error) {
	if c.TxnID == "" {
		c.TxnID = NewUUID()
	}
	if c.Now.IsZero() {
		c.Now = time.Now()
	}
	// Version s.Version+1 may only be put on top of the commit s was read
	// from: after the table was deleted and created again it would land on
	// another table's log, past its end.
	// The check is made here, after the caller uploaded the data files:
	// made earlier, it would not cover a table replaced meanwhile.
	// A new table (NewTable) has no head yet: the log must still be empty.
	creating := s.IsNew()
	if creating {
		var err error
		existing, err := beforeCreate(ctx, store, s)
		if err != nil {
			return nil, err
		}
		if existing != nil {
			if s, err = createdElsewhere(s, existing, &c); err != nil {
				return nil, err
			}
		}
	} else {
		if err := verifyHead(ctx, store, s); err != nil {
			return nil, err
		}
	}
	// Catch up by name with the commits made since s was read: against a
	// busy writer the version after s is most likely taken already, and a
	// lost put is a round trip spent finding that out. The reads come after
	// the head check, one name after the other, so the read that finds the
	// next name free is the last request before the put: a race is lost
	// only to a commit that lands between the two (or whose put was already
	// under way), about one put's latency. Reading the names concurrently,
	// or alongside the head check, was measured to lose more races (three
	// writers on MinIO: 47-54 % of commits against 27-39 %): the put then
	// waits for the slowest read after the free name was seen.
	var winners []Commit
	var err error
	if !creating && (opts == nil || !opts.SkipCatchUp) {
		if winners, err = readWinners(ctx, store, s.Version+1, nil); err != nil {
			return nil, err
		}
	}
	adopt := func(s *Snapshot, winners []Commit) (*Snapshot, []Commit, error) {
		if !s.IsNew() {
			return s, winners, nil
		}
		// Another writer created the table first: take it if it is the
		// one we meant to create, and append on top of it.
		created, err := createdSnapshot(winners[0], s.opts)
		if err != nil {
			return nil, nil, err
		}
		if s, err = createdElsewhere(s, created, &c); err != nil {
			return nil, nil, err
		}
		return s, winners[1:], nil
	}
	return commitLoop(ctx, store, s, winners, c.TxnID, &c.Now, opts, "commit", adopt,
		func(winners []Commit) ConflictResult { return ResolveGroupConflict(c.apps(), c.TxnID, winners) },
		func(s *Snapshot) (*PreparedCommit, error) { return PrepareAppend(s, c) })
}

// commitLoop is what appends and merges share after the head check and
// the catch-up: take the winners read so far into s (adopt, when not nil,
// first: a table another writer created), resolve them, put the prepared
// commit at the next version, and on a lost race read the new winners by
// name and go again. now is the commit's clock: after winners it moves on,
// so lastUpdated and the ICT stay truthful.
func commitLoop(ctx context.Context, store Store, s *Snapshot, winners []Commit, txnID string, now *time.Time,
	opts *CommitOptions, what string,
	adopt func(*Snapshot, []Commit) (*Snapshot, []Commit, error),
	resolve func([]Commit) ConflictResult,
	prepare func(*Snapshot) (*PreparedCommit, error)) (*CommitResult, error) {
	maxAttempts, lost, pause := opts.loop()
	var err error
	for attempt := 1; ; attempt++ {
		if len(winners) > 0 && adopt != nil {
			if s, winners, err = adopt(s, winners); err != nil {
				return nil, err
			}
		}
		if len(winners) > 0 {
			if err := sameTable(s, winners); err != nil {
				return nil, err
			}
			var done *CommitResult
			if s, done, err = settle(s, winners, resolve(winners), txnID, attempt); done != nil || err != nil {
				return done, err
			}
			// Retry: s now includes the winners, read by name, so version
			// s.Version+1 is the next free one as far as anyone knows: go
			// again at once.
			*now = time.Now()
		}
		if attempt > maxAttempts {
			return nil, fmt.Errorf("deltalog: %s gave up after %d commit attempts lost to concurrent writers", what, maxAttempts)
		}
		pc, err := prepare(s)
		var already *AlreadyCommittedError
		if errors.As(err, &already) {
			return &CommitResult{Version: s.Version, TxnID: txnID, AlreadyCommitted: true, Snapshot: s, Attempts: attempt}, nil
		}
		if err != nil {
			return nil, err
		}
		outcome, first, err := putCommit(ctx, store, pc)
		switch outcome {
		case Committed:
			return landed(s, pc, attempt)
		case Retryable:
			return nil, err
		case Conflict:
			lost(pc.Version)
			if winners, err = readWinners(ctx, store, pc.Version, first); err != nil {
				return nil, err
			}
			if pause != nil {
				if err := backoff.Sleep(ctx, pause(attempt)); err != nil {
					return nil, err
				}
			}
		default:
			return nil, err
		}
	}
}

// verifyHead checks that the log still holds the commit s was read from,
// byte for byte: a commit put at s.Version+1 would otherwise land on
// another table's log, or past what s knows.
func verifyHead(ctx context.Context, store Store, s *Snapshot) error {
	fresh, err := s.VerifyHead(ctx, store)
	if err != nil {
		return err
	}
	if fresh != nil {
		return &StaleSnapshotError{Version: s.Version}
	}
	return nil
}

// catchUp is verifyHead, then the commits made since s read by name: the
// start of a commit that must see every commit since its snapshot.
func catchUp(ctx context.Context, store Store, s *Snapshot) ([]Commit, error) {
	if err := verifyHead(ctx, store, s); err != nil {
		return nil, err
	}
	return readWinners(ctx, store, s.Version+1, nil)
}

// loop returns the settings of a commit loop: attempts before giving up,
// the lost-race hook, the pause between attempts (nil: none).
func (o *CommitOptions) loop() (maxAttempts int, lost func(int64), pause backoff.Schedule) {
	maxAttempts, lost = 20, func(int64) {}
	if o == nil {
		return maxAttempts, lost, nil
	}
	if o.MaxAttempts > 0 {
		maxAttempts = o.MaxAttempts
	}
	if o.LostRace != nil {
		lost = o.LostRace
	}
	return maxAttempts, lost, o.Backoff
}

// settle applies the winners to s as far as res reaches (all of them when
// the commit goes again) and returns the commit's result when res ends it:
// committed (by an earlier attempt), already committed, or aborted.
// done == nil && err == nil: put again on top of the returned snapshot.
func settle(s *Snapshot, winners []Commit, res ConflictResult, txnID string, attempt int) (next *Snapshot, done *CommitResult, err error) {
	for _, w := range winners {
		if w.Version > res.Version && res.Resolution != ResolutionRetry {
			break
		}
		if s, err = s.Apply(w.Version, w.Actions); err != nil {
			return nil, nil, err
		}
		s.withHead(w.Data)
	}
	switch res.Resolution {
	case ResolutionCommitted:
		return s, &CommitResult{Version: res.Version, TxnID: txnID, Snapshot: s, Attempts: attempt}, nil
	case ResolutionAlreadyCommitted:
		return s, &CommitResult{Version: res.Version, TxnID: txnID, AlreadyCommitted: true, Snapshot: s, Attempts: attempt}, nil
	case ResolutionAbort:
		return s, nil, res.Err
	}
	return s, nil, nil
}

// landed is the result of pc, put as version pc.Version on top of s at the
// given attempt.
func landed(s *Snapshot, pc *PreparedCommit, attempt int) (*CommitResult, error) {
	next, err := s.Apply(pc.Version, pc.Actions)
	if err != nil {
		return nil, err
	}
	return &CommitResult{Version: pc.Version, TxnID: pc.TxnID, Snapshot: next.withHead(pc.Data), Attempts: attempt,
		Actions: pc.Actions}, nil
}

// Commit is one commit file read from the log.
type Commit struct {
	Version int64
	Actions []Action
	Data    []byte // the file as read
}

func parseCommit(v int64, data []byte) (Commit, error) {
	var actions []Action
	err := scanCommit(CommitPath(v), data, projAll, func(a Action) error { actions = append(actions, a); return nil })
	if err != nil {
		return Commit{}, err
	}
	return Commit{Version: v, Actions: actions, Data: data}, nil
}

// ReadCommit reads the commit at version v, once: a commit cleaned up
// from the log (or never written) is ErrNotFound.
func ReadCommit(ctx context.Context, store Store, v int64) (Commit, error) {
	data, err := store.Get(ctx, CommitPath(v))
	if err != nil {
		return Commit{}, err
	}
	return parseCommit(v, data)
}

// ReadCommits reads the contiguous commits from version from onward, in
// order. The listing only says how far the log goes: each version is read
// by name, because a listing taken while another writer commits can show
// version n+1 before n — a hole in a listing is not a hole in the log. A
// version below the newest listed one that is not there even by name is a
// *LogGapError.
func ReadCommits(ctx context.Context, store Store, from int64) ([]Commit, error) {
	files, err := store.List(ctx, LogDir, versionPrefix(from))
	if err != nil {
		return nil, err
	}
	latest := from - 1
	for _, fi := range files {
		if lf, ok := parseLogFile(fi); ok && lf.kind == fileCommit {
			latest = max(latest, lf.version)
		}
	}
	var out []Commit
	for v := from; v <= latest; v++ {
		data, err := getExisting(ctx, store, v)
		if errors.Is(err, ErrNotFound) {
			return nil, &LogGapError{Missing: v, Latest: latest}
		}
		if err != nil {
			return nil, err
		}
		c, err := parseCommit(v, data)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// readWinners reads, by name and without listing the log, the commits from
// version from onward up to the first free name: the ones that won the race
// for from (whose file putCommit read back: first), or, with first nil, the
// ones made since a snapshot was read. A name that reads as missing is where
// the committer tries next; if it was merely slow to show, that put loses
// and reads on from there.
func readWinners(ctx context.Context, store Store, from int64, first []byte) ([]Commit, error) {
	var out []Commit
	v := from
	if first != nil {
		c, err := parseCommit(from, first)
		if err != nil {
			return nil, err
		}
		out, v = append(out, c), from+1
	}
	for ; ; v++ {
		data, err := store.Get(ctx, CommitPath(v))
		if errors.Is(err, ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		c, err := parseCommit(v, data)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
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
