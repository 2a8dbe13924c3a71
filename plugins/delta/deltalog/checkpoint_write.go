package deltalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"
)

// Checkpoint writing (PROTOCOL.md "Checkpoints", "Checkpoint Schema",
// "Last Checkpoint File Schema"). Decisions:
//
//   - A classic single-file checkpoint, NNN.checkpoint.parquet, written
//     with PutIfAbsent: an existing checkpoint for the version (a racing
//     writer's) is kept and counts as success. Multi-part checkpoints are
//     deprecated (delta-kernel-rs makes the same choice).
//   - Tables with the v2Checkpoint feature and delta.checkpointPolicy=v2
//     get a UUID-named JSON V2 checkpoint whose file actions are in
//     sidecars that later checkpoints reuse (checkpoint_v2.go): its cost
//     follows what changed.
//   - Column layout follows Delta-Spark's: top-level txn, add, remove,
//     metaData, protocol, domainMetadata (sidecars: add, remove), every
//     field optional, 3-level lists, key_value maps with optional values,
//     INT32/INT64 exactly as Spark types them. Readers find columns by name.
//   - add.stats is the JSON string unless delta.checkpoint.writeStatsAsJson
//     is false; add.stats_parsed (typed, parsed back from the JSON) only
//     when delta.checkpoint.writeStatsAsStruct is true and the table does
//     not use column mapping (stats_parsed would need physical names).
//     partitionValues_parsed is not written.
//   - Checkpoint rows carry dataChange=false (as Spark's); removes have no
//     stats or tags (PROTOCOL.md: tombstones only serve VACUUM).
//   - Tombstones whose deletionTimestamp is not after now -
//     delta.deletedFileRetentionDuration (default 1 week; no timestamp = 0)
//     and txns whose lastUpdated is at or before now -
//     delta.setTransactionRetentionDuration are left out.
//   - Rows are ordered: protocol, metaData, txns and domains (by id), adds
//     and removes in log order — the same state always encodes the same
//     way.
//   - _last_checkpoint is then written, never moved backwards (see
//     WriteLastCheckpoint).

// CheckpointPath is the classic checkpoint file of version.
func CheckpointPath(version int64) string {
	return fmt.Sprintf("%s%020d.checkpoint.parquet", LogDir, version)
}

// ErrCheckpointNotSupported is matched by every refusal to checkpoint a
// table whose protocol this package does not know how to checkpoint.
var ErrCheckpointNotSupported = errors.New("deltalog: this writer cannot checkpoint the table")

// CheckpointSupported reports whether WriteCheckpoint may checkpoint a table
// with this protocol: known versions, no unknown feature (it could change
// what a checkpoint must hold), not catalog-managed (checkpoints there
// follow the catalog's rules).
func CheckpointSupported(p Protocol) error {
	if p.MinReaderVersion > MaxReaderVersion || p.MinWriterVersion > MaxWriterVersion {
		return fmt.Errorf("%w: protocol (reader %d, writer %d)", ErrCheckpointNotSupported, p.MinReaderVersion, p.MinWriterVersion)
	}
	for _, name := range SupportedFeatures(p) {
		f := LookupFeature(name)
		switch {
		case !f.Known:
			return fmt.Errorf("%w: unknown table feature %q", ErrCheckpointNotSupported, name)
		case name == "catalogManaged" || name == "catalogOwned-preview":
			return fmt.Errorf("%w: table feature %q", ErrCheckpointNotSupported, name)
		}
	}
	return nil
}

// CheckpointOptions tunes WriteCheckpoint. The zero value is ready to use.
type CheckpointOptions struct {
	// Now is the clock of tombstone and txn retention. Default time.Now.
	Now func() time.Time
	// Logger receives notes (e.g. stats_parsed skipped). Default: discard.
	Logger *slog.Logger
	// CreatedBy is the Parquet footer's created_by. Default
	// DefaultEngineInfo.
	CreatedBy string
	// RowGroupRows bounds the rows of one Parquet row group (and so the
	// writer's and readers' memory). Default 16384.
	RowGroupRows int
	// Cache, when set, keeps the encoded adds from one checkpoint of a
	// State to the next (checkpoint_cache.go). Default: none, every add
	// is encoded.
	Cache *CheckpointCache
}

func (o *CheckpointOptions) now() time.Time       { return orNow(o.Now) }
func (o *CheckpointOptions) logger() *slog.Logger { return orDiscard(o.Logger) }

// CheckpointResult describes a written (or found) checkpoint.
type CheckpointResult struct {
	Version int64
	Path    string
	// Actions is the number of rows (actions) in our encoding, Adds the
	// number of add rows, SizeInBytes the file's size.
	Actions, Adds, SizeInBytes int64
	// Existed is set when the checkpoint file was already there (another
	// writer's); it was left untouched.
	Existed bool
	// LastCheckpointWritten reports whether _last_checkpoint now names this
	// checkpoint because we wrote it (false: it already named this version
	// or a newer one).
	LastCheckpointWritten bool
	// Cache says how the encoding used CheckpointOptions.Cache.
	Cache CheckpointCacheStats
}

// WriteCheckpoint writes the classic checkpoint of st at st.Version with
// PutIfAbsent, then updates _last_checkpoint (never backwards). st is only
// read. A checkpoint must only be written for a committed version, which a
// State loaded from the log always is.
func WriteCheckpoint(ctx context.Context, store Store, st *State, opts *CheckpointOptions) (*CheckpointResult, error) {
	var o CheckpointOptions
	if opts != nil {
		o = *opts
	}
	if err := CheckpointSupported(st.Protocol); err != nil {
		return nil, err
	}
	if usesV2Checkpoints(st) {
		return writeV2Checkpoint(ctx, store, st, &o)
	}
	res := &CheckpointResult{Version: st.Version, Path: CheckpointPath(st.Version)}
	if fi, ok, err := StatObject(ctx, store, res.Path); err != nil {
		return nil, err
	} else if ok {
		res.Existed, res.SizeInBytes = true, fi.Size
		res.Actions, res.Adds = checkpointActions(st, o.now())
	} else {
		data, n, adds, cst, err := encodeCheckpoint(ctx, st, &o)
		if err != nil {
			return nil, err
		}
		res.Cache = cst
		res.Actions, res.Adds, res.SizeInBytes = n, adds, int64(len(data))
		err = store.PutIfAbsent(ctx, res.Path, data)
		switch {
		case errors.Is(err, ErrAlreadyExists):
			res.Existed = true
		case err != nil:
			return nil, err
		}
	}
	return pointLastCheckpoint(ctx, store, res)
}

// pointLastCheckpoint points _last_checkpoint at the checkpoint res
// describes (never backwards) and returns res.
func pointLastCheckpoint(ctx context.Context, store Store, res *CheckpointResult) (*CheckpointResult, error) {
	written, err := WriteLastCheckpoint(ctx, store, LastCheckpoint{
		Version: res.Version, Size: res.Actions, SizeInBytes: res.SizeInBytes, NumOfAddFiles: res.Adds})
	if err != nil {
		return res, fmt.Errorf("deltalog: checkpoint %d written, _last_checkpoint not updated: %w", res.Version, err)
	}
	res.LastCheckpointWritten = written
	return res, nil
}

// checkpointTxns is the txns a checkpoint at now keeps: those
// delta.setTransactionRetentionDuration has not expired. o may be nil.
func (st *State) checkpointTxns(o *CheckpointOptions, now time.Time) map[string]Txn {
	lo := LoadOptions{Now: func() time.Time { return now }}
	if o != nil {
		lo.Logger = o.Logger
	}
	return liveTxns(st.txns, &st.Metadata, lo)
}

// checkpointActions counts the rows EncodeCheckpoint would write.
func checkpointActions(st *State, now time.Time) (actions, adds int64) {
	adds = int64(len(st.files))
	actions = 2 + adds + int64(len(st.domains))
	actions += int64(len(st.checkpointTxns(nil, now)))
	cutoff, expire := st.tombstoneCutoff(now)
	for _, t := range st.tombs {
		if !expire || t.delTS > cutoff {
			actions++
		}
	}
	return actions, adds
}

// EncodeCheckpoint renders st as a classic checkpoint's Parquet bytes and
// returns them with the number of actions (rows) and of adds. With
// opts.Cache it reuses the adds that cache encoded for st before (and the
// cache follows st from then on), and the bytes are only valid until the
// cache's next checkpoint; without, every row is encoded.
func EncodeCheckpoint(ctx context.Context, st *State, opts *CheckpointOptions) (data []byte, actions, adds int64, err error) {
	data, actions, adds, _, err = encodeCheckpoint(ctx, st, opts)
	return data, actions, adds, err
}

func encodeCheckpoint(ctx context.Context, st *State, opts *CheckpointOptions) ([]byte, int64, int64, CheckpointCacheStats, error) {
	var o CheckpointOptions
	if opts != nil {
		o = *opts
	}
	c := o.Cache
	if c == nil {
		c = &CheckpointCache{oneShot: true}
	}
	return c.encode(ctx, st, &o)
}

// filesInOrder and tombsInOrder return the entries in the order they
// reached the state (log order): checkpoints of the same state are
// identical, and sorting integers is much cheaper than sorting paths.
func filesInOrder(m map[string]fileEntry) []fileEntry {
	out := slices.AppendSeq(make([]fileEntry, 0, len(m)), maps.Values(m))
	slices.SortFunc(out, func(a, b fileEntry) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

func tombsInOrder(m map[string]tombEntry) []tombEntry {
	out := slices.AppendSeq(make([]tombEntry, 0, len(m)), maps.Values(m))
	slices.SortFunc(out, func(a, b tombEntry) int { return cmp.Compare(a.seq, b.seq) })
	return out
}
