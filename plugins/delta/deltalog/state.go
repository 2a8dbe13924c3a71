package deltalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Full table state (PROTOCOL.md "Action Reconciliation"), for writing
// checkpoints. A Snapshot is what an appender needs and deliberately holds
// no file list; a State is what a checkpoint must contain: protocol,
// metaData, every live add, the remove tombstones, the latest txn per appId
// and the live domainMetadata.
//
// Memory is the design constraint (a table may have hundreds of thousands
// of live files): a file is kept as one compact value in a map keyed by its
// logical-file key, partition-value tuples are interned (a partitioned
// table has few distinct ones and every add carries one), and the fields
// appends never set (tags, deletion vector, row tracking, clustering) live
// behind one pointer that is nil for plain appends. Retention
// (delta.deletedFileRetentionDuration for tombstones,
// delta.setTransactionRetentionDuration for txns) is applied when a
// checkpoint is written, never during reconciliation.

// DeletionVector is the deletion-vector descriptor of an add or remove
// (PROTOCOL.md "Deletion Vector Descriptor Schema"). This package never
// reads deletion vectors; it keeps the descriptor so a checkpoint carries
// it unchanged, and uses UniqueID for the logical-file key.
type DeletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
	// MaxRowIndex is written by Delta-Spark; not in PROTOCOL.md's table.
	MaxRowIndex *int64 `json:"maxRowIndex,omitempty"`
}

// UniqueID is the descriptor's derived uniqueId: storageType and
// pathOrInlineDv, then "@offset" when an offset is present.
func (dv *DeletionVector) UniqueID() string {
	id := dv.StorageType + dv.PathOrInlineDv
	if dv.Offset != nil {
		id += "@" + strconv.FormatInt(int64(*dv.Offset), 10)
	}
	return id
}

// ParseDeletionVector decodes add.deletionVector / remove.deletionVector as
// kept raw in Add and Remove. An empty or null descriptor is (nil, nil).
func ParseDeletionVector(raw json.RawMessage) (*DeletionVector, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dv := new(DeletionVector)
	if err := json.Unmarshal(raw, dv); err != nil {
		return nil, fmt.Errorf("deltalog: bad deletionVector: %w", err)
	}
	return dv, nil
}

// fileEntry is one live add.
type fileEntry struct {
	seq     uint64 // order of arrival, for checkpoints in log order
	path    string
	pv      *pvTuple // interned: shared, never modified
	size    int64
	modTime int64
	stats   string
	x       *fileExtra
}

// fileExtra holds the add/remove fields a plain append never sets.
type fileExtra struct {
	tags                    map[string]string
	dv                      *DeletionVector
	baseRowID               *int64
	defaultRowCommitVersion *int64
	clusteringProvider      string
}

// tombEntry is one remove tombstone. Its stats and tags are not kept:
// PROTOCOL.md "Checkpoints" leaves them out of checkpoint removes.
type tombEntry struct {
	seq   uint64
	path  string
	delTS int64 // deletionTimestamp; 0 when absent
	size  int64
	flags uint8
	pv    *pvTuple // nil when absent
	x     *fileExtra
}

const (
	tombHasSize uint8 = 1 << iota
	tombHasExt        // extendedFileMetadata present
	tombExtTrue       // extendedFileMetadata value
)

// State is a table's full reconciled state at Version. It is not safe for
// concurrent use; Apply and Update change it in place.
type State struct {
	// Version is the table version the state reflects.
	Version int64
	// CheckpointVersion is the checkpoint the state was loaded from (-1:
	// replayed from version 0).
	CheckpointVersion int64
	// replayState holds Protocol and Metadata (promoted), the txns and the
	// domains: reconciled exactly as for a Snapshot (replay.go).
	replayState

	files map[string]fileEntry
	tombs map[string]tombEntry
	pvs   map[string]*pvTuple // interned partition-value tuples

	seq  uint64
	opts LoadOptions
	// journal, when a CheckpointCache follows the state, records the
	// files it gained and lost (checkpoint_cache.go).
	journal *fileJournal
}

func newState(o LoadOptions) *State {
	return &State{
		Version:           -1,
		CheckpointVersion: -1,
		replayState:       *newReplayState(),
		files:             map[string]fileEntry{},
		tombs:             map[string]tombEntry{},
		pvs:               map[string]*pvTuple{},
		opts:              o,
	}
}

// NumFiles is the number of live files (adds).
func (s *State) NumFiles() int { return len(s.files) }

// NumTombstones is the number of remove tombstones held, expired or not.
func (s *State) NumTombstones() int { return len(s.tombs) }

// TxnVersion returns the latest version recorded for appID, ignoring
// retention.
func (s *State) TxnVersion(appID string) (int64, bool) {
	t, ok := s.txns[appID]
	return t.Version, ok
}

// Txns returns the latest txn per appId minus those expired under
// delta.setTransactionRetentionDuration at the state's clock — what a
// checkpoint written now holds. The map is a copy.
func (s *State) Txns() map[string]Txn {
	return maps.Clone(liveTxns(s.txns, &s.Metadata, s.opts))
}

// Domains returns the live domainMetadata per domain (a copy).
func (s *State) Domains() map[string]DomainMetadata { return maps.Clone(s.domains) }

// Files yields every live add, in no particular order. The actions are
// built on the fly; callers may keep them but must not modify their maps.
func (s *State) Files() iter.Seq[*Add] {
	return func(yield func(*Add) bool) {
		for _, e := range s.files {
			if !yield(e.add()) {
				return
			}
		}
	}
}

// Tombstones yields every remove tombstone held, expired or not.
func (s *State) Tombstones() iter.Seq[*Remove] {
	return func(yield func(*Remove) bool) {
		for _, t := range s.tombs {
			if !yield(t.remove()) {
				return
			}
		}
	}
}

// File returns the live add for path (without a deletion vector), if any.
func (s *State) File(path string) (*Add, bool) {
	e, ok := s.files[path]
	if !ok {
		return nil, false
	}
	return e.add(), true
}

func (e *fileEntry) add() *Add {
	a := &Add{Path: e.path, PartitionValues: e.pv.m, Size: e.size, ModificationTime: e.modTime, DataChange: false, Stats: e.stats}
	if x := e.x; x != nil {
		a.Tags = x.tags
		a.BaseRowID = x.baseRowID
		a.DefaultRowCommitVersion = x.defaultRowCommitVersion
		a.ClusteringProvider = x.clusteringProvider
		if x.dv != nil {
			a.DeletionVector, _ = json.Marshal(x.dv)
		}
	}
	return a
}

func (t *tombEntry) remove() *Remove {
	r := &Remove{Path: t.path}
	if t.pv != nil {
		r.PartitionValues = t.pv.m
	}
	if t.delTS != 0 {
		ts := t.delTS
		r.DeletionTimestamp = &ts
	}
	if t.flags&tombHasSize != 0 {
		sz := t.size
		r.Size = &sz
	}
	if t.flags&tombHasExt != 0 {
		b := t.flags&tombExtTrue != 0
		r.ExtendedFileMetadata = &b
	}
	if x := t.x; x != nil {
		r.BaseRowID = x.baseRowID
		r.DefaultRowCommitVersion = x.defaultRowCommitVersion
		if x.dv != nil {
			r.DeletionVector, _ = json.Marshal(x.dv)
		}
	}
	return r
}

// fileKey is the logical-file key: the path, plus the deletion vector's
// uniqueId when there is one.
func fileKey(path string, dv *DeletionVector) string {
	if dv == nil {
		return path
	}
	return path + "\x00" + dv.UniqueID()
}

// pvTuple is an interned partition-value tuple, its keys sorted.
type pvTuple struct {
	m    PartitionValues
	keys []string
}

// intern returns the shared copy of a partition-value tuple.
func (s *State) intern(pv PartitionValues) *pvTuple {
	if pv == nil {
		return nil
	}
	var b strings.Builder
	keys := slices.Sorted(maps.Keys(pv))
	for _, k := range keys {
		b.WriteString(k)
		if v := pv[k]; v == nil {
			b.WriteByte(0)
		} else {
			b.WriteByte(1)
			b.WriteString(*v)
		}
		b.WriteByte(0xff) // never in UTF-8
	}
	key := b.String()
	if shared, ok := s.pvs[key]; ok {
		return shared
	}
	// A copy: the tuple outlives the action, whose map the caller may
	// reuse (actions handed over from memory by the committer).
	own := make(PartitionValues, len(pv))
	for k, v := range pv {
		if v != nil {
			v = new(*v)
		}
		own[k] = v
	}
	t := &pvTuple{m: own, keys: keys}
	s.pvs[key] = t
	return t
}

func (s *State) applyAdd(a *Add) error {
	dv, err := ParseDeletionVector(a.DeletionVector)
	if err != nil {
		return err
	}
	s.seq++
	e := fileEntry{seq: s.seq, path: a.Path, pv: s.intern(a.PartitionValues), size: a.Size, modTime: a.ModificationTime, stats: a.Stats}
	if e.pv == nil {
		e.pv = s.intern(PartitionValues{})
	}
	if len(a.Tags) > 0 || dv != nil || a.BaseRowID != nil || a.DefaultRowCommitVersion != nil || a.ClusteringProvider != "" {
		e.x = &fileExtra{tags: a.Tags, dv: dv, baseRowID: a.BaseRowID,
			defaultRowCommitVersion: a.DefaultRowCommitVersion, clusteringProvider: a.ClusteringProvider}
	}
	key := fileKey(a.Path, dv)
	if s.journal != nil {
		if old, ok := s.files[key]; ok {
			s.journal.drop(old.seq)
		}
		s.journal.add(key)
	}
	s.files[key] = e
	delete(s.tombs, key)
	return nil
}

func (s *State) applyRemove(r *Remove) error {
	dv, err := ParseDeletionVector(r.DeletionVector)
	if err != nil {
		return err
	}
	s.seq++
	t := tombEntry{seq: s.seq, path: r.Path}
	if r.DeletionTimestamp != nil {
		t.delTS = *r.DeletionTimestamp
	}
	if r.Size != nil {
		t.size, t.flags = *r.Size, t.flags|tombHasSize
	}
	if r.ExtendedFileMetadata != nil {
		t.flags |= tombHasExt
		if *r.ExtendedFileMetadata {
			t.flags |= tombExtTrue
		}
	}
	if r.PartitionValues != nil {
		t.pv = s.intern(r.PartitionValues)
	}
	if dv != nil || r.BaseRowID != nil || r.DefaultRowCommitVersion != nil {
		t.x = &fileExtra{dv: dv, baseRowID: r.BaseRowID, defaultRowCommitVersion: r.DefaultRowCommitVersion}
	}
	key := fileKey(r.Path, dv)
	if s.journal != nil {
		if old, ok := s.files[key]; ok {
			s.journal.drop(old.seq)
		}
	}
	delete(s.files, key)
	s.tombs[key] = t
	return nil
}

// applyAction folds one action into the state, in log order: the file
// actions here, the others by the reconciliation a Snapshot uses. Actions
// that do not belong to the table state (commitInfo, cdc, checkpoint-only
// actions, unknown ones) are ignored.
func (s *State) applyAction(a Action) error {
	switch a := a.(type) {
	case *Add:
		return s.applyAdd(a)
	case *Remove:
		return s.applyRemove(a)
	}
	s.replayState.apply(a)
	return nil
}

// Apply advances the state by one commit: actions are the commit's
// actions, version must be s.Version+1. Within the commit actions apply in
// order: an add replaces the live entry with the same key (path plus
// deletion vector) and cancels its tombstone; a remove drops the live entry
// and records a tombstone.
func (s *State) Apply(version int64, actions []Action) error {
	if version != s.Version+1 {
		return fmt.Errorf("deltalog: cannot apply version %d to a state at %d", version, s.Version)
	}
	for _, a := range actions {
		if err := s.applyAction(a); err != nil {
			return fmt.Errorf("deltalog: version %d: %w", version, err)
		}
	}
	s.Version = version
	return nil
}

// Update advances the state by reading the commits after s.Version up to
// and including version to (to < 0: every commit there is). Only those
// commit files are read. It returns how many commits were applied; a
// *LogGapError means the log no longer holds them (cleaned up behind a
// newer checkpoint) and the state must be loaded again.
func (s *State) Update(ctx context.Context, store Store, to int64) (int, error) {
	if to >= 0 && to <= s.Version {
		return 0, nil
	}
	files, err := store.List(ctx, LogDir, versionPrefix(s.Version+1))
	if err != nil {
		return 0, err
	}
	next := s.Version + 1
	n := 0
	for _, fi := range files {
		lf, ok := parseLogFile(fi)
		if !ok || lf.kind != fileCommit {
			continue
		}
		if to >= 0 && lf.version > to {
			break
		}
		if lf.version != next {
			return n, &LogGapError{Missing: next, Latest: lf.version}
		}
		var actions []Action
		if _, err := readCommit(ctx, store, lf.Path, projState, func(a Action) error { actions = append(actions, a); return nil }); err != nil {
			return n, err
		}
		if err := s.Apply(lf.version, actions); err != nil {
			return n, err
		}
		next++
		n++
	}
	if to >= 0 && s.Version < to {
		return n, &LogGapError{Missing: s.Version + 1, Latest: to}
	}
	return n, nil
}

// ExpireTombstones drops the tombstones a checkpoint written at now would
// leave out (see CheckpointOptions) and returns how many were dropped.
func (s *State) ExpireTombstones(now time.Time) int {
	cutoff, ok := s.tombstoneCutoff(now)
	if !ok {
		return 0
	}
	n := 0
	for k, t := range s.tombs {
		if t.delTS <= cutoff {
			delete(s.tombs, k)
			n++
		}
	}
	return n
}

// DefaultDeletedFileRetention is delta.deletedFileRetentionDuration's
// default.
const DefaultDeletedFileRetention = 7 * 24 * time.Hour

// tombstoneCutoff is the deletionTimestamp at or below which a tombstone
// has expired (Spark keeps delTimestamp > now - retention; a remove without
// a timestamp counts as 0 and so has always expired). ok is false when the
// property cannot be parsed: then nothing expires.
func (s *State) tombstoneCutoff(now time.Time) (int64, bool) {
	d := DefaultDeletedFileRetention
	if raw, ok := s.Metadata.Configuration["delta.deletedFileRetentionDuration"]; ok {
		v, err := ParseInterval(raw)
		if err != nil {
			s.opts.logger().Warn("deltalog: ignoring unparsable delta.deletedFileRetentionDuration; keeping every tombstone", "value", raw, "err", err)
			return 0, false
		}
		d = v
	}
	return now.Add(-d).UnixMilli(), true
}

// LoadState reads the table's full state at its latest version: the newest
// complete checkpoint (file actions included, V2 sidecars followed) and the
// commits after it. opts works as for Load (Now is the clock of txn
// retention in Txns and of ExpireTombstones callers).
func LoadState(ctx context.Context, store Store, opts *LoadOptions) (*State, error) {
	return loadState(ctx, store, -1, opts)
}

// LoadStateAt is LoadState for the table as of version: checkpoints and
// commits after it are ignored.
func LoadStateAt(ctx context.Context, store Store, version int64, opts *LoadOptions) (*State, error) {
	if version < 0 {
		return nil, fmt.Errorf("deltalog: negative version %d", version)
	}
	return loadState(ctx, store, version, opts)
}

func loadState(ctx context.Context, store Store, at int64, opts *LoadOptions) (*State, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	seg, err := logSegment(ctx, store, at, o.logger())
	if err != nil {
		return nil, err
	}
	if at >= 0 && seg.latest != at {
		return nil, fmt.Errorf("deltalog: version %d is not in the log (latest %d)", at, seg.latest)
	}

	st := newState(o)
	if seg.checkpoint != nil {
		st.CheckpointVersion = seg.checkpoint[0].version
		if err := seg.readCheckpoint(ctx, store, projState, st.applyAction); err != nil {
			return nil, err
		}
		st.Version = st.CheckpointVersion
	}
	for _, c := range seg.commits {
		_, err := readCommit(ctx, store, c.Path, projState, st.applyAction)
		if errors.Is(err, ErrNotFound) {
			return nil, &LogGapError{Missing: c.version, Latest: seg.latest}
		}
		if err != nil {
			return nil, err
		}
		st.Version = c.version
	}
	st.Version = seg.latest
	if !st.complete() {
		return nil, fmt.Errorf("%w: no protocol or metaData action up to version %d", ErrCorruptLog, seg.latest)
	}
	return st, nil
}

// sidecarPath resolves sidecar.path: a file name (what writers are asked to
// store) or a URI, relative or absolute, of a file in _delta_log/_sidecars.
func sidecarPath(p string) (string, error) {
	name := p
	if i := strings.LastIndex(name, "/"); i >= 0 {
		dir := name[:i]
		if !strings.HasSuffix(dir, "_sidecars") {
			return "", fmt.Errorf("deltalog: sidecar %q is not in _delta_log/_sidecars", p)
		}
		name = name[i+1:]
	}
	if unescaped, err := pathUnescape(name); err == nil {
		name = unescaped
	}
	if name == "" || name == "." || name == ".." {
		return "", fmt.Errorf("deltalog: bad sidecar path %q", p)
	}
	return LogDir + "_sidecars/" + name, nil
}

// pathUnescape decodes %XX escapes (RFC 2396 paths; '+' stays '+').
func pathUnescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", errors.New("bad escape")
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", errors.New("bad escape")
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}
