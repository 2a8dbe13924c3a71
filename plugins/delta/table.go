package delta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/changes"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// table is one open Delta table. mu is the per-table lock: batches for one
// table are encoded and committed one group at a time, by the leader of its
// queue (group.go). A table knows nothing of the sink that opened it: what
// it needs comes in its tableEnv.
type table struct {
	mu  sync.Mutex
	uri string
	env *tableEnv
	// queue holds the batches waiting for the table's next commit; opened
	// is set once load succeeded, so that a batch joins the queue without
	// waiting for mu, which the group being written holds.
	queue  queue
	opened atomic.Bool

	store objstore.Store
	local *objstore.Local // the store when the table is file://, closed by close
	snap  *deltalog.Snapshot
	// stale is set after any failed write: the next batch reads the log
	// again before deciding what is already committed.
	stale bool
	// alone is set while no other writer's commit was seen lately (see
	// put): the commit skips its catch-up read. crowded is when one was
	// last seen (or a commit failed); zero: never.
	alone   bool
	crowded time.Time

	enc    *encode.Encoder
	encKey string          // the table definition enc was built for
	meta   encode.Meta     // AddRecord's argument, reused
	hdrs   []encode.Header // meta.Headers' backing array, reused

	// write_mode = "upsert" (upsert.go): the key renderer, for the schema
	// keysFor; the live files, of table filesID.
	keys    *encode.Keys
	keysFor string
	files   *deltalog.State
	filesID string

	ckpt *checkpointer // checkpoints and log cleanup (checkpointer.go)
	comp *compactor    // compaction = true (compact.go); nil when off
}

// tableEnv is what a table needs from the sink that opened it, given at
// creation and shared by every table of the sink. It holds no pointer back
// to the sink: a table can be built, written and closed on its own (the
// tests in outcome_internal_test.go do so with a store that fails on cue).
type tableEnv struct {
	// open opens the object store at a table's location: objstore.Open
	// with the sink's storage settings.
	open func(context.Context, objstore.Location) (objstore.Store, error)
	log  *slog.Logger
	// spawn starts a goroutine that lives until the instance closes
	// (sdk.Host.Go): each table's checkpointer.
	spawn func(func(context.Context))
	opts  tableOptions

	// The sink's metrics, which every table adds to.
	stats    *counters
	ckpt     *checkpointStats
	requests *objstore.Requests // every table's store operations (objstore.Counted)
	commits  *sdk.Commits       // the newest version committed per table (Sink.LastCommits)

	compact      *compactOptions // nil: compaction is off
	compactStats *compactStats
}

// tableOptions are the plugin_config settings a table writes by.
type tableOptions struct {
	exactlyOnce     bool
	skipEmpty       bool // skip_empty_payloads
	metadataColumns bool
	addColumns      bool                // schema_evolution = "add_columns"
	derive          []encode.Derivation // derived_columns, parsed
	create          *definition         // the table create_table makes; nil when off
	typesFromSchema bool                // column_types = "value_schema" (valueschema.go)
	groupMaxBytes   int                 // group_commit_max_bytes (group.go)
	groupLinger     time.Duration       // group_commit_linger (group.go)
	changes         *changes.Config     // write_mode = "upsert" (upsert.go); nil: append
}

func newTable(uri string, env *tableEnv) *table { return &table{uri: uri, env: env} }

// load opens the table on first use; vs is the value schema of the batch
// that asks (create.go). Callers hold t.mu.
func (t *table) load(ctx context.Context, vs []byte) error {
	if t.snap != nil {
		return nil
	}
	loc, err := objstore.ParseLocation(t.uri)
	if err != nil {
		return uriError(err)
	}
	store, err := t.env.open(ctx, loc)
	if err != nil {
		if ue := uriError(err); ue != nil {
			return ue
		}
		return fmt.Errorf("Failed to load Delta table %s: %w", t.uri, err)
	}
	if l, ok := store.(*objstore.Local); ok {
		l.CountSyncs(&t.env.stats.fsyncs)
		t.local = l
	}
	store = objstore.Counted(store, t.env.requests)
	snap, err := t.open(ctx, store, vs)
	if err != nil {
		return err
	}
	t.store, t.snap = store, snap
	t.ckpt = t.newCheckpointer(snap)
	t.opened.Store(true)
	t.comp = startCompactor(t, store)
	return nil
}

// newCheckpointer returns the checkpointer of the table just opened (or
// found replaced) at snap, scheduling a missed checkpoint.
func (t *table) newCheckpointer(snap *deltalog.Snapshot) *checkpointer {
	c := newCheckpointer(t.uri, t.store, t.env.log, t.env.ckpt, t.env.spawn)
	c.opened(snap)
	return c
}

// close releases what the table holds: the encoder's buffers, the
// checkpointer, and a file:// table's root. Every write commits before it
// returns, so there is nothing to flush.
func (t *table) close() {
	t.queue.close()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.enc != nil {
		t.enc.Reset()
	}
	if t.ckpt != nil {
		t.ckpt.stop()
	}
	t.comp.stop()
	if t.local != nil {
		// A checkpoint still running fails its put rather than use a
		// closed root (file_sync = "filesystem").
		t.local.Close()
	}
}

// open reads the table, or with create_table returns the table to create
// when there is none (its first commit creates it, create.go), from vs,
// the batch's value schema, when table_schema does not say.
func (t *table) open(ctx context.Context, store objstore.Store, vs []byte) (*deltalog.Snapshot, error) {
	snap, err := deltalog.Load(ctx, store, &deltalog.LoadOptions{Logger: t.env.log})
	if errors.Is(err, deltalog.ErrNoTable) && t.env.opts.create != nil {
		if snap, err = t.env.opts.create.newTable(vs); err != nil {
			return nil, fmt.Errorf("Delta table %s cannot be created: %w", t.uri, err)
		}
		t.env.log.Info("no Delta table yet; the first batch creates it", "table", t.uri,
			"partition_columns", strings.Join(snap.PartitionColumns, ","),
			"min_reader_version", snap.Protocol.MinReaderVersion, "min_writer_version", snap.Protocol.MinWriterVersion)
		return snap, nil
	}
	if err != nil {
		return nil, fmt.Errorf("Failed to load Delta table %s: %w", t.uri, err)
	}
	if err := snap.Writable(); err != nil {
		return nil, fmt.Errorf("Delta table %s cannot be written by this sink: %w", t.uri, err)
	}
	t.env.log.Info("opened Delta table", "table", t.uri, "version", snap.Version,
		"partition_columns", strings.Join(snap.PartitionColumns, ","))
	t.existingWins(snap)
	return snap, nil
}

// existingWins logs, at info, that an existing table is written as it is
// when create_table would have made it differently.
func (t *table) existingWins(snap *deltalog.Snapshot) {
	if t.env.opts.create == nil || t.env.opts.create.fromBatch() {
		return
	}
	want, err := t.env.opts.create.newTable(nil)
	if err != nil {
		return
	}
	if d := deltalog.DefinitionDiff(want, snap); d != "" {
		t.env.log.Info("the Delta table exists with another definition than table_schema and partition_by; it is written as it is",
			"table", t.uri, "difference", d)
	}
}

// refresh reads the commits made since our snapshot; vs is the batch's
// value schema, for a table still to be created. The error is the
// batch's (RETRY).
func (t *table) refresh(ctx context.Context, vs []byte) error {
	if t.snap.IsNew() {
		// Not created yet: is it now (by another writer, or by our own
		// commit whose answer was lost)?
		snap, err := t.open(ctx, t.store, vs)
		if errors.Is(err, deltalog.ErrNotWritable) || errors.Is(err, errValueSchema) {
			return sdk.Fatal(err) // created by a writer that uses features we refuse
		}
		if err != nil {
			return sdk.Retry(err)
		}
		if !snap.IsNew() && t.enc != nil {
			t.enc.Reset()
		}
		t.snap, t.stale = snap, false
		return nil
	}
	snap, err := t.snap.Update(ctx, t.store)
	var replaced *deltalog.TableReplacedError
	if errors.As(err, &replaced) {
		return t.replaced(ctx, replaced)
	}
	if err != nil {
		return sdk.Retry(fmt.Errorf("Failed to load Delta table %s: %w", t.uri, err))
	}
	t.snap, t.stale = snap, false
	return nil
}

// replaced switches to the table that now lives at t.uri after ours was
// deleted and another one created there (another metaData.id). The batch
// in hand fails with RETRY, naming both tables, so the change shows in the
// runtime; its redelivery is written to the new table, filtered against
// the new table's application transactions (which know nothing of ours:
// every record of the batch is written). What the old table had is not
// copied over.
func (t *table) replaced(ctx context.Context, r *deltalog.TableReplacedError) error {
	snap := r.Snapshot
	if snap == nil { // a winning commit showed the new id: read the table
		var err error
		snap, err = deltalog.Load(ctx, t.store, &deltalog.LoadOptions{Logger: t.env.log})
		if err != nil {
			t.stale = true
			return sdk.Retry(fmt.Errorf("Delta table %s was replaced (table id %s became %s at version %d) and could not be reloaded: %w",
				t.uri, r.OldID, r.NewID, r.NewVersion, err))
		}
	}
	msg := fmt.Sprintf("Delta table %s was replaced: table id %s (version %d) is now table id %s (version %d)",
		t.uri, r.OldID, r.OldVersion, snap.Metadata.ID, snap.Version)
	t.env.log.Warn(msg+"; reloaded it, the batch is retried against the new table and nothing is copied from the old one",
		"table", t.uri, "old_table_id", r.OldID, "new_table_id", snap.Metadata.ID)
	if t.enc != nil {
		t.enc.Reset()
	}
	t.ckpt.stop() // its file list is the old table's
	t.snap, t.stale = snap, false
	t.ckpt = t.newCheckpointer(snap)
	return sdk.Retry(fmt.Errorf("%s; the batch is retried against the new table", msg))
}

// createdElsewhere handles the table another writer created first, with
// another definition than ours: the batch's files, written for ours, are
// not committed. The batch fails with RETRY saying so; its redelivery is
// written to the existing table as to any table that exists.
func (t *table) createdElsewhere(c *deltalog.CreateConflictError) error {
	t.snap, t.stale = c.Existing, true
	msg := fmt.Sprintf("Delta table %s was created by another writer (table id %s) with another definition than %s and %s: %s",
		t.uri, c.Existing.Metadata.ID, keyTableSchema, keyPartitionBy, c.Detail)
	t.env.log.Info(msg+"; the existing table wins and the batch is retried against it", "table", t.uri)
	return sdk.Retry(fmt.Errorf("%s; the batch is retried against the existing table", msg))
}

// encoder returns the encoder for the current snapshot's definition,
// building a new one when the schema, partitioning or stats settings moved.
func (t *table) encoder() (*encode.Encoder, error) {
	return t.encoderFor(&t.snap.Metadata, t.snap.Schema)
}

// encoderFor returns the encoder for a table definition (metaData and its
// parsed schema), the cached one when the definition is the same.
func (t *table) encoderFor(m *deltalog.Metadata, schema *deltalog.StructType) (*encode.Encoder, error) {
	key := m.SchemaString + "\x00" + strings.Join(m.PartitionColumns, "\x00") + "\x00" +
		m.Configuration["delta.dataSkippingStatsColumns"] + "\x00" + m.Configuration["delta.dataSkippingNumIndexedCols"] + "\x00" +
		m.Configuration["delta.dataSkippingStringPrefixLength"]
	if t.enc != nil && t.encKey == key {
		return t.enc, nil
	}
	enc, err := encode.New(schema, m.PartitionColumns, encode.Options{Configuration: m.Configuration, CreatedBy: engineInfo(),
		InferUnknown: t.env.opts.addColumns,
		Metadata:     t.env.opts.metadataColumns, Derive: t.env.opts.derive})
	var ce *encode.ConfigError
	if errors.As(err, &ce) {
		key := keyMetadataColumns
		if ce.Derive {
			key = keyDerivedColumns
		}
		return nil, sdk.Fatalf("plugin_config key %q: Delta table %s: %w", key, t.uri, err)
	}
	if err != nil {
		return nil, sdk.Fatalf("Delta table %s cannot be written by this sink: %v", t.uri, err)
	}
	t.enc, t.encKey = enc, key
	return enc, nil
}

// checkFills builds the encoder to find, at open, columns that
// metadata_columns or derived_columns cannot fill (BAD_CONFIG). Any other
// reason the encoder cannot be built is left for the first batch, as
// without those keys.
func (t *table) checkFills() error {
	if !t.env.opts.metadataColumns && len(t.env.opts.derive) == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := t.encoder()
	var ce *encode.ConfigError
	if errors.As(err, &ce) {
		return sdk.BadConfig(errors.Unwrap(err))
	}
	return nil
}

// addRecord buffers record r of b: its payload, and its metadata for the
// pico_* columns.
func (t *table) addRecord(enc *encode.Encoder, b *sdk.Batch, r *sdk.Record) error {
	m := &t.meta
	*m = encode.Meta{Topic: b.Topic, Partition: b.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key}
	if t.env.opts.metadataColumns && len(r.Headers) > 0 {
		for _, h := range r.Headers {
			t.hdrs = append(t.hdrs, encode.Header(h))
		}
		m.Headers = t.hdrs
	}
	err := enc.AddRecord(r.Payload, m)
	// Keys and headers are the host's memory, valid for this call only.
	clear(t.hdrs)
	t.hdrs = t.hdrs[:0]
	m.Key, m.Headers = nil, nil
	return err
}

// pending returns the records of b the table does not have yet: with
// exactly-once, those above the offset the table records for appID.
func (t *table) pending(b *sdk.Batch, appID string) ([]sdk.Record, error) {
	records := b.Records
	if !t.env.opts.exactlyOnce {
		return records, nil
	}
	if lastSeq(b) > math.MaxInt64 {
		return nil, sdk.Fatalf("offset %d does not fit a Delta txn version", lastSeq(b))
	}
	done, ok := t.snap.TxnVersion(appID)
	if !ok {
		return records, nil
	}
	skip := 0
	for skip < len(records) && int64(b.SeqOffset(skip)) <= done {
		skip++
	}
	if skip > 0 {
		t.env.stats.skipped.Add(int64(skip))
		t.env.stats.replays.Add(1)
		attrs := []any{"table", t.uri, "topic", b.Topic, "skipped", skip, "remaining", len(records) - skip, "committed_offset", done, "table_version", t.snap.Version}
		if r := b.Redrive; r != nil {
			// committed_offset is then a dead-letter offset.
			attrs = append(attrs, "dead_letter_topic", r.Topic, "dead_letter_partition", r.Partition)
		}
		t.env.log.Info("skipping records already committed to the Delta table", attrs...)
	}
	return records[skip:], nil
}

// lastSeq is the offset the batch's txn records: its last record's, or in
// a redrive batch its last dead-letter offset (sdk.Batch.SeqOffset).
func lastSeq(b *sdk.Batch) uint64 {
	if len(b.Records) == 0 {
		return 0
	}
	return b.SeqOffset(len(b.Records) - 1)
}

// notRejected counts the records of b.Records[:n] not rejected: of the
// records a replay skipped, those the SDK counts as skipped rather than
// rejected.
func notRejected(b *sdk.Batch, n int) int {
	k := 0
	for i := range n {
		if !b.Rejected(i) {
			k++
		}
	}
	return k
}

// recheck finds again the records a replay skips (the first skip of b,
// committed by an earlier delivery) that the first delivery rejected: the
// host may have lost that answer, and ABI 1.1 asks for the same rejections
// on every delivery of a batch. Only when the host accepts rejections. The
// commits that hold those records say which they rejected (rejections.go);
// when they cannot be read, the records are checked against today's schema,
// with a warning, except in a redrive batch, which fails FATAL (a record
// rejected then would pass now, after the fix, and be skipped unwritten).
// The encoder is left empty.
func (t *table) recheck(ctx context.Context, b *sdk.Batch, appID string, skip int) error {
	if skip == 0 || !b.CanReject() {
		return nil
	}
	var prior map[uint64]priorRejection
	recorded := t.env.opts.exactlyOnce
	if recorded {
		found, ok, err := t.findRejections(ctx, appID, b.SeqOffset(0))
		if err != nil {
			return sdk.Retry(fmt.Errorf("Failed to load Delta table %s: reading the commits of a replayed batch: %w", t.uri, err))
		}
		if !ok && b.Redrive != nil {
			// Dead letters are put back after a fix, usually of the very
			// schema they failed: decided again now, one rejected then
			// would pass and be skipped as written though it never was.
			return sdk.Fatalf("Failed to write to Delta table %s: dead letters %s/%d at offsets %d..%d were committed by an earlier redrive whose commits are gone from the Delta log or more than %d commits back, so which of them it rejected is not known; nothing is written. Run `picomq-connect audit` to see which of their source records the table lacks and produce those again (to the source topic, or to the dead-letter topic with a higher pico_redrive_attempts)",
				t.uri, b.Redrive.Topic, b.Redrive.Partition, b.SeqOffset(0), b.SeqOffset(skip-1), rejectionWalkLimit)
		}
		if !ok {
			t.env.log.Warn("the commits that hold a replayed batch are gone from the Delta log or too far back; its rejections are decided again against the table's schema now",
				"table", t.uri, "topic", b.Topic, "first_offset", b.Records[0].Offset, "walk_limit", rejectionWalkLimit)
		}
		prior, recorded = found, ok
	}
	enc, err := t.encoder()
	if err != nil {
		return err
	}
	defer enc.Reset()
	for i := range skip {
		r := &b.Records[i]
		if recorded {
			p, was := prior[b.SeqOffset(i)]
			if !was {
				continue
			}
			// Today's message when the record still fails, else one that
			// says when it was rejected.
			var rerr error
			if err := t.decideRecord(enc, b, r); err != nil {
				_, rerr, _ = rejectable(b.Topic, i, r.Payload, err)
			}
			if rerr == nil {
				rerr = priorRejectionError(b.Topic, r.Offset, p, t.uri)
			}
			b.Reject(i, p.reason, rerr)
			continue
		}
		if len(r.Payload) == 0 && t.env.opts.skipEmpty && t.env.opts.changes == nil {
			continue
		}
		if err := t.decideRecord(enc, b, r); err != nil {
			if reason, rerr, ok := rejectable(b.Topic, i, r.Payload, err); ok {
				b.Reject(i, reason, rerr)
			} else if ce := (*changes.Error)(nil); errors.As(err, &ce) {
				b.Reject(i, sdk.RejectValue, changeError(b.Topic, r.Offset, i, t.env.opts.changes, err))
			}
		}
	}
	return nil
}

// decideRecord encodes record r of b into enc as a commit would, to decide
// its rejection again: the record as a row, or with write_mode = "upsert"
// as a change (checkChange).
func (t *table) decideRecord(enc *encode.Encoder, b *sdk.Batch, r *sdk.Record) error {
	if t.env.opts.changes != nil {
		return t.checkChange(enc, b, r)
	}
	return t.addRecord(enc, b, r)
}

// recordError turns an encoder error into the batch's error. A record that
// cannot be made to fit the table fails the batch for good, with the
// encoder's message as is: "Invalid record value: ..." (the spec's wording)
// for every value that does not fit its column, "Invalid JSON record: ..."
// for a payload that is not a JSON object, both naming topic, the record's
// index in the batch and its offset.
func recordError(topic string, index int, payload []byte, err error) error {
	var re *encode.RecordError
	if !errors.As(err, &re) {
		// The only other failure is a batch too large for one file: the
		// same batch will never fit.
		return sdk.Fatal(fmt.Errorf("Storage error: Failed to write to Delta writer: %w", err))
	}
	re.Topic = topic
	// The encoder counts the records it was given; a replay or skipped
	// tombstones give it fewer than the batch has.
	re.Index = index
	if len(payload) == 0 {
		re.Detail = "empty payload (a tombstone?): the Delta sink writes JSON objects only; set skip_empty_payloads = true to skip empty payloads"
	}
	return sdk.Fatal(re)
}

// rejectable reports whether an encoder error is one record's (a
// *encode.RecordError), with its ABI 1.1 reason and the message recordError
// would fail the batch with.
func rejectable(topic string, index int, payload []byte, err error) (sdk.RejectReason, error, bool) {
	var re *encode.RecordError
	if !errors.As(err, &re) {
		return 0, nil, false
	}
	reason := sdk.RejectValue
	if re.Kind == encode.ErrInvalidJSON || re.Kind == encode.ErrNotObject {
		reason = sdk.RejectEncoding
	}
	ferr := recordError(topic, index, payload, err)
	return reason, errors.Unwrap(ferr), true
}

func engineInfo() string { return "picomq-delta-sink/" + sdk.BuildVersion() }
