package deltalog

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"
)

// Snapshot is the table state a blind-append writer needs at one version:
// protocol, metadata and schema, application transactions and domain
// metadata. It deliberately holds no file list. A Snapshot is immutable:
// Apply and Update return a new one, so it may be shared between goroutines.
// Callers must not modify the maps and slices it exposes.
type Snapshot struct {
	// Version is the table version (the highest commit in the log).
	Version int64
	// CheckpointVersion is the checkpoint the snapshot was loaded from, or -1
	// when the whole log was replayed from version 0.
	CheckpointVersion int64
	Protocol          Protocol
	Metadata          Metadata
	// Schema is Metadata.SchemaString parsed.
	Schema           *StructType
	PartitionColumns []string
	// Txns holds the latest txn per appId, minus those expired under
	// delta.setTransactionRetentionDuration at load time.
	Txns map[string]Txn
	// Domains holds the live (not removed) domainMetadata per domain.
	Domains map[string]DomainMetadata
	// CommitInfo is the commitInfo of the commit at Version, when that commit
	// was read and had one (nil otherwise).
	CommitInfo *CommitInfo
	// InCommitTimestamp is commitInfo.inCommitTimestamp of the commit at
	// Version, or 0 when unknown (feature off, or the commit file is gone).
	InCommitTimestamp int64

	state    *replayState
	opts     LoadOptions
	writeErr error
	// head is the SHA-256 of the commit file at Version, when known: the
	// identity check before a commit (VerifyHead) compares it with what the
	// log holds now.
	head      [sha256.Size]byte
	headKnown bool
}

// withHead records the bytes of the commit file at s.Version. s must be
// fresh (not yet shared).
func (s *Snapshot) withHead(commit []byte) *Snapshot {
	s.head, s.headKnown = sha256.Sum256(commit), true
	return s
}

// LoadOptions tunes Load. The zero value is ready to use.
type LoadOptions struct {
	// Now is the clock used to expire txn actions under
	// delta.setTransactionRetentionDuration. Default time.Now.
	Now func() time.Time
	// Logger receives debug notes about the log (an ignored or stale
	// _last_checkpoint, and the like). Default: discard.
	Logger *slog.Logger
}

func (o *LoadOptions) now() time.Time       { return orNow(o.Now) }
func (o *LoadOptions) logger() *slog.Logger { return orDiscard(o.Logger) }

// orNow reads clock, the default of every option named Now: time.Now.
func orNow(clock func() time.Time) time.Time {
	if clock != nil {
		return clock()
	}
	return time.Now()
}

// orDiscard is l, or when nil the default of every option named Logger: a
// logger that drops everything.
func orDiscard(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// Errors from Load and Update.
var (
	// ErrNoTable means _delta_log holds no commit or checkpoint: there is no
	// Delta table at this location (this package never creates one).
	ErrNoTable = errors.New("deltalog: no Delta table (empty or missing _delta_log)")
	// ErrCorruptLog means the log cannot be reconciled: a missing protocol or
	// metaData action, an unreadable checkpoint, an unparsable commit.
	ErrCorruptLog = errors.New("deltalog: corrupt Delta log")
)

// LogGapError reports a commit missing between the checkpoint (or version
// 0) and the newest commit. Snapshots are never built across a gap.
type LogGapError struct {
	Missing int64 // first missing version
	Latest  int64 // newest commit seen
}

func (e *LogGapError) Error() string {
	return fmt.Sprintf("deltalog: commit %d is missing from the log (latest is %d)", e.Missing, e.Latest)
}

// ErrTableReplaced is matched by *TableReplacedError.
var ErrTableReplaced = errors.New("deltalog: the table was replaced by another table at the same location")

// TableReplacedError reports that the log no longer belongs to the table a
// snapshot was read from: the table was deleted and another one created at
// the same location (a different metaData.id), or its history was rewound.
// Nothing may be committed on top of the old snapshot: its version, schema
// and application transactions describe a table that is gone.
type TableReplacedError struct {
	OldID      string // metaData.id of the snapshot we held
	OldVersion int64
	NewID      string // metaData.id the log holds now
	NewVersion int64  // the new table's version (or the commit that showed the new id)
	// Snapshot is the new table, when it was loaded (nil when a winning
	// commit's metaData showed the new id).
	Snapshot *Snapshot
}

func (e *TableReplacedError) Error() string {
	return fmt.Sprintf("deltalog: the table was replaced: table id %s at version %d is now table id %s at version %d",
		e.OldID, e.OldVersion, e.NewID, e.NewVersion)
}

func (e *TableReplacedError) Is(target error) bool { return target == ErrTableReplaced }

// StaleSnapshotError reports that the commit at the snapshot's version is no
// longer the one the snapshot was read from (cleaned up, or rewritten by a
// writer without put-if-absent) while the table is still the same one. It
// matches ErrConcurrentModification: reload, and rebuild the commit.
type StaleSnapshotError struct {
	Version int64
}

func (e *StaleSnapshotError) Error() string {
	return fmt.Sprintf("deltalog: the log no longer holds version %d as this writer read it; the batch must be rebuilt against a reloaded snapshot", e.Version)
}

func (e *StaleSnapshotError) Unwrap() error { return ErrConcurrentModification }

// Writable returns CheckWritable's verdict for this snapshot: nil, or why
// this package's writer refuses to append to the table.
func (s *Snapshot) Writable() error { return s.writeErr }

// TxnVersion returns the latest committed version for an application id.
func (s *Snapshot) TxnVersion(appID string) (int64, bool) {
	t, ok := s.Txns[appID]
	return t.Version, ok
}

// InCommitTimestampEnabled reports whether commits to this table must carry
// a monotonic commitInfo.inCommitTimestamp.
func (s *Snapshot) InCommitTimestampEnabled() bool {
	return inCommitTimestampEnabled(&s.Protocol, &s.Metadata)
}

// NextInCommitTimestamp is the inCommitTimestamp (ms since epoch) the next
// commit must carry: the later of now and one millisecond after the current
// version's timestamp, as PROTOCOL.md "In-Commit Timestamps" requires.
func (s *Snapshot) NextInCommitTimestamp(now time.Time) int64 {
	return max(now.UnixMilli(), s.InCommitTimestamp+1)
}

// Load builds the latest snapshot of the table in store. It reads
// _last_checkpoint as a hint only, lists _delta_log from there, starts from
// the newest complete checkpoint and replays the contiguous commits after it.
// Tables this package's writer would refuse still load; see CheckWritable.
func Load(ctx context.Context, store Store, opts *LoadOptions) (*Snapshot, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	seg, err := logSegment(ctx, store, -1, o.logger())
	if err != nil {
		return nil, err
	}

	st := newReplayState()
	cpVersion := int64(-1)
	if seg.checkpoint != nil {
		cpVersion = seg.checkpoint[0].version
	}
	if err := seg.readCheckpoint(ctx, store, projTable, func(a Action) error { st.apply(a); return nil }); err != nil {
		return nil, err
	}
	var lastInfo *CommitInfo
	var head []byte
	for i, c := range seg.commits {
		isLast := i == len(seg.commits)-1
		info, data, err := replayCommit(ctx, store, c, st, isLast)
		if errors.Is(err, ErrNotFound) {
			// Not even there by name (listSegmentUpTo fills holes in a
			// listing with the name): a real gap.
			err = &LogGapError{Missing: c.version, Latest: seg.latest}
		}
		if err != nil {
			return nil, err
		}
		if isLast {
			lastInfo, head = info, data
		}
	}
	if !st.complete() {
		return nil, fmt.Errorf("%w: no protocol or metaData action up to version %d", ErrCorruptLog, seg.latest)
	}
	// Checkpoints drop commitInfo, so when the snapshot version is the
	// checkpoint itself, its in-commit timestamp lives in the commit file.
	// Its bytes identify the table's head (see VerifyHead), so read it
	// either way; a commit cleaned up behind the checkpoint leaves the head
	// unknown.
	if len(seg.commits) == 0 && seg.atCheckpoint != nil {
		info, data, err := readCommitInfo(ctx, store, *seg.atCheckpoint)
		if err != nil {
			return nil, err
		}
		if inCommitTimestampEnabled(&st.Protocol, &st.Metadata) {
			lastInfo = info
		}
		head = data
	}
	s, err := newSnapshot(seg.latest, cpVersion, st, lastInfo, o)
	if err != nil || head == nil {
		return s, err
	}
	return s.withHead(head), nil
}

func newSnapshot(version, cpVersion int64, st *replayState, info *CommitInfo, o LoadOptions) (*Snapshot, error) {
	schema, err := ParseSchema(st.Metadata.SchemaString)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptLog, err)
	}
	s := &Snapshot{
		Version:           version,
		CheckpointVersion: cpVersion,
		Protocol:          st.Protocol,
		Metadata:          st.Metadata,
		Schema:            schema,
		PartitionColumns:  st.Metadata.PartitionColumns,
		Domains:           st.domains,
		CommitInfo:        info,
		state:             st,
		opts:              o,
	}
	if info != nil && info.InCommitTimestamp != nil {
		s.InCommitTimestamp = *info.InCommitTimestamp
	}
	s.Txns = liveTxns(st.txns, &st.Metadata, o)
	s.writeErr = checkWritable(s.Protocol, s.Metadata, schema)
	return s, nil
}

// liveTxns applies delta.setTransactionRetentionDuration to the reconciled
// txns. Retention is applied after reconciliation, never during it: an
// expired newest txn must not resurrect an older one for the same appId.
func liveTxns(all map[string]Txn, md *Metadata, o LoadOptions) map[string]Txn {
	raw, ok := md.Configuration["delta.setTransactionRetentionDuration"]
	if !ok {
		return all
	}
	d, err := ParseInterval(raw)
	if err != nil {
		// Keeping every txn is the safe failure: it can only make a writer
		// skip a batch it already committed, never commit one twice.
		o.logger().Warn("deltalog: ignoring unparsable delta.setTransactionRetentionDuration", "value", raw, "err", err)
		return all
	}
	cutoff := o.now().Add(-d).UnixMilli()
	live := make(map[string]Txn, len(all))
	for id, t := range all {
		if t.LastUpdated != nil && *t.LastUpdated <= cutoff {
			continue
		}
		live[id] = t
	}
	return live
}

// Apply returns the snapshot that results from committing actions as
// version s.Version+1 — the committer uses it to advance past commits that
// won a race without reloading the table.
func (s *Snapshot) Apply(version int64, actions []Action) (*Snapshot, error) {
	if version != s.Version+1 {
		return nil, fmt.Errorf("deltalog: cannot apply version %d to snapshot at %d", version, s.Version)
	}
	st := s.state.clone()
	var info *CommitInfo
	for _, a := range actions {
		if ci, ok := a.(*CommitInfo); ok && info == nil {
			info = ci
		}
		st.apply(a)
	}
	return newSnapshot(version, s.CheckpointVersion, st, info, s.opts)
}

// Update returns a snapshot advanced to the newest version by reading the
// commits after s.Version. If there are none, it returns s. If the log no
// longer holds them contiguously (cleaned up behind a newer checkpoint), it
// falls back to a full Load.
//
// Before reading on, it checks that the log still holds the table s was
// read from (VerifyHead): a table replaced at the same location is a
// *TableReplacedError carrying the new table's snapshot, never a snapshot
// that mixes the two.
func (s *Snapshot) Update(ctx context.Context, store Store) (*Snapshot, error) {
	fresh, err := s.VerifyHead(ctx, store)
	if err != nil || fresh != nil {
		return fresh, err
	}
	commits, err := ReadCommits(ctx, store, s.Version+1)
	var gap *LogGapError
	if errors.As(err, &gap) || errors.Is(err, ErrNotFound) {
		return Load(ctx, store, &s.opts)
	}
	if err != nil {
		return nil, err
	}
	cur := s
	for _, c := range commits {
		if cur, err = cur.Apply(c.Version, c.Actions); err != nil {
			return nil, err
		}
		cur.withHead(c.Data)
	}
	return cur, nil
}

// VerifyHead checks that the log still holds the table s was read from:
// the commit file at s.Version is there, byte for byte the one s knows. It
// returns nil, nil when it is. Otherwise it loads the table afresh and
// compares identities: another metaData.id (or a version below s.Version:
// history rewound) is a *TableReplacedError with the new snapshot; the same
// table is returned as the fresh snapshot; no table at all is an error
// wrapping ErrNoTable. A committer calls it before putting version
// s.Version+1, so that no commit lands on a predecessor that is not the one
// it read — on a new table's log that would leave a gap every reader
// refuses.
func (s *Snapshot) VerifyHead(ctx context.Context, store Store) (*Snapshot, error) {
	if s.headKnown {
		data, err := store.Get(ctx, CommitPath(s.Version))
		if err == nil && sha256.Sum256(data) == s.head {
			return nil, nil
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	fresh, err := Load(ctx, store, &s.opts)
	if errors.Is(err, ErrNoTable) {
		return nil, fmt.Errorf("the table (id %s, version %d) is gone: %w", s.Metadata.ID, s.Version, err)
	}
	if err != nil {
		return nil, err
	}
	if fresh.Metadata.ID != s.Metadata.ID || fresh.Version < s.Version {
		return nil, &TableReplacedError{OldID: s.Metadata.ID, OldVersion: s.Version,
			NewID: fresh.Metadata.ID, NewVersion: fresh.Version, Snapshot: fresh}
	}
	if !s.headKnown && fresh.Version == s.Version {
		// s was loaded at a checkpoint whose commit file is gone: the same
		// table at the same version is all there is to compare.
		return nil, nil
	}
	return fresh, nil
}

// replayCommit folds one commit file into st and returns its commitInfo when
// wantInfo is set.
func replayCommit(ctx context.Context, store Store, c logFile, st *replayState, wantInfo bool) (*CommitInfo, []byte, error) {
	proj := projTable
	if wantInfo {
		proj = projTableInfo
	}
	var info *CommitInfo
	data, err := readCommit(ctx, store, c.Path, proj, func(a Action) error {
		if ci, ok := a.(*CommitInfo); ok {
			if info == nil {
				info = ci
			}
			return nil
		}
		st.apply(a)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return info, data, nil
}

func readCommitInfo(ctx context.Context, store Store, c logFile) (*CommitInfo, []byte, error) {
	var info *CommitInfo
	data, err := readCommit(ctx, store, c.Path, projTableInfo, func(a Action) error {
		if ci, ok := a.(*CommitInfo); ok && info == nil {
			info = ci
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return info, data, nil
}

// lastCheckpoint is the part of _last_checkpoint the loader uses.
type lastCheckpoint struct {
	Version *int64 `json:"version"`
}

// readLastCheckpoint returns the checkpoint version the hint names. A
// missing or unparsable hint is not an error — the hint is an optimization;
// a storage failure is.
func readLastCheckpoint(ctx context.Context, store Store) (int64, bool, error) {
	data, err := store.Get(ctx, LastCheckpointPath)
	if errors.Is(err, ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	var lc lastCheckpoint
	if json.Unmarshal(data, &lc) != nil || lc.Version == nil || *lc.Version < 0 {
		return 0, false, nil
	}
	return *lc.Version, true, nil
}

// segment is the set of log files a snapshot is built from.
type segment struct {
	checkpoint   []logFile // parts of the chosen checkpoint (nil: none)
	atCheckpoint *logFile  // commit file at the checkpoint version, if listed
	commits      []logFile // contiguous commits after the checkpoint
	latest       int64
}

// logSegment is the one log segment both projections replay: the table at
// version at (< 0: the latest), listed from the _last_checkpoint hint when
// the hint is usable, else from the start of the log.
func logSegment(ctx context.Context, store Store, at int64, log *slog.Logger) (*segment, error) {
	startAfter := ""
	hint, hasHint, err := readLastCheckpoint(ctx, store)
	if err != nil {
		return nil, err
	}
	if hasHint && (at < 0 || hint <= at) {
		startAfter = versionPrefix(hint)
	} else {
		hasHint = false
	}
	seg, err := listSegmentUpTo(ctx, store, startAfter, at)
	if hasHint && (err != nil || seg.checkpoint == nil) {
		// The hint is stale or wrong (no usable checkpoint at or after it):
		// list the whole log instead of trusting it.
		log.Debug("deltalog: _last_checkpoint hint not usable, listing whole log", "hint", hint, "err", err)
		seg, err = listSegmentUpTo(ctx, store, "", at)
	}
	return seg, err
}

// readCheckpoint reads the segment's checkpoint parts (none when it has no
// checkpoint) and passes the actions proj wants to fn.
func (seg *segment) readCheckpoint(ctx context.Context, store Store, proj projection, fn func(Action) error) error {
	for _, part := range seg.checkpoint {
		if err := readCheckpointPart(ctx, store, part, proj, fn); err != nil {
			if ctx.Err() != nil || IsTransient(err) {
				return err
			}
			return fmt.Errorf("%w: checkpoint %s: %w", ErrCorruptLog, part.Path, err)
		}
	}
	return nil
}

// listSegmentUpTo lists _delta_log after startAfter and picks the newest
// complete checkpoint plus the commits after it, for the table at version
// maxVersion (< 0: the latest): files of later versions are ignored.
func listSegmentUpTo(ctx context.Context, store Store, startAfter string, maxVersion int64) (*segment, error) {
	files, err := store.List(ctx, LogDir, startAfter)
	if err != nil {
		return nil, err
	}
	commits := map[int64]logFile{}
	cps := checkpointSets{}
	latest := int64(-1)
	for _, fi := range files {
		lf, ok := parseLogFile(fi)
		if !ok || (maxVersion >= 0 && lf.version > maxVersion) {
			continue
		}
		if lf.kind == fileCommit {
			commits[lf.version] = lf
			latest = max(latest, lf.version)
			continue
		}
		cps.add(lf)
	}
	chosen := newestCheckpoint(cps)
	seg := &segment{checkpoint: chosen, latest: latest}
	start := int64(0)
	if chosen != nil {
		cpv := chosen[0].version
		start = cpv + 1
		seg.latest = max(latest, cpv)
		if c, ok := commits[cpv]; ok {
			seg.atCheckpoint = &c
		}
	}
	if seg.latest < 0 {
		return nil, ErrNoTable
	}
	for v := start; v <= seg.latest; v++ {
		c, ok := commits[v]
		if !ok {
			// A listing taken while another writer commits can show v+1
			// before v: a hole in the listing is not a hole in the log.
			// Read v by name; the reader reports a real gap.
			c = logFile{FileInfo: FileInfo{Path: CommitPath(v)}, kind: fileCommit, version: v}
		}
		seg.commits = append(seg.commits, c)
	}
	return seg, nil
}

// checkpointSets are the checkpoint files listed, by version.
type checkpointSets map[int64]*checkpointSet

func (m checkpointSets) add(lf logFile) {
	cs := m[lf.version]
	if cs == nil {
		cs = &checkpointSet{}
		m[lf.version] = cs
	}
	cs.add(lf)
}

// checkpointSet is the checkpoint files listed for one version.
type checkpointSet struct {
	classic   *logFile
	v2        []logFile
	multipart map[int]map[int]logFile // parts -> part -> file
}

// complete reports whether the set holds a whole checkpoint: a classic or
// V2 one, or every part of a multi-part one.
func (cs *checkpointSet) complete() bool {
	return cs.pick() != nil
}

func (cs *checkpointSet) add(lf logFile) {
	switch lf.kind {
	case fileCheckpointClassic:
		c := lf // escapes: a copy here, so that lf does not
		cs.classic = &c
	case fileCheckpointV2JSON, fileCheckpointV2Parquet:
		cs.v2 = append(cs.v2, lf)
	case fileCheckpointMultiPart:
		if cs.multipart == nil {
			cs.multipart = map[int]map[int]logFile{}
		}
		if cs.multipart[lf.parts] == nil {
			cs.multipart[lf.parts] = map[int]logFile{}
		}
		cs.multipart[lf.parts][lf.part] = lf
	}
}

// newestCheckpoint returns the files of the newest complete checkpoint
// (nil: none).
func newestCheckpoint(cps checkpointSets) []logFile {
	versions := slices.Sorted(maps.Keys(cps))
	for i := len(versions) - 1; i >= 0; i-- {
		if files := cps[versions[i]].pick(); files != nil {
			return files
		}
	}
	return nil
}

// pick returns the files of the set's checkpoint to read, nil when none
// is complete. Preference: a V2 JSON checkpoint (no Parquet decoding), V2
// Parquet, classic, then multi-part — any complete one yields the same
// state.
func (cs *checkpointSet) pick() []logFile {
	slices.SortFunc(cs.v2, func(a, b logFile) int { return int(a.kind) - int(b.kind) })
	switch {
	case len(cs.v2) > 0:
		return []logFile{cs.v2[0]}
	case cs.classic != nil:
		return []logFile{*cs.classic}
	}
	for _, n := range slices.Sorted(maps.Keys(cs.multipart)) {
		if len(cs.multipart[n]) == n {
			var files []logFile
			for p := 1; p <= n; p++ {
				files = append(files, cs.multipart[n][p])
			}
			return files
		}
	}
	return nil
}
