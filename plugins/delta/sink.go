package delta

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/template"
)

// Name is the plugin name describe() reports.
const Name = "delta_sink"

// Plugin is the registration of the sink, for the library's main package
// (sdk.Register(delta.Plugin())) and for tests that open it in-process.
// The sink's decoder rejects what is not a JSON object itself, hence
// ValidatesPayloads; it parses every payload in full and accepts nothing
// json.Valid refuses (FuzzDecode, FuzzValue), hence ChecksJSON: the runtime
// leaves the JSON check to it. Batches for one table that arrive together
// are written as one commit (group.go), hence ConcurrentConsume. A redrive
// batch (ABI 1.4) is written exactly once under a txn of its dead-letter
// partition (appID), hence Redrive. A partition's pipelined batch (ABI
// 1.5) is written in its predecessor's group commit or after its
// predecessor was answered OK (group.go), hence Pipelined.
func Plugin() sdk.Plugin[Config] {
	return sdk.Plugin[Config]{Name: Name, New: func() sdk.Sink[Config] { return &Sink{} }, ValidatesPayloads: true, ChecksJSON: true,
		Metrics: metrics, ConcurrentConsume: true, Redrive: true, Pipelined: true}
}

// Sink is the Delta Lake sink. One instance serves every table its
// table_uri template resolves to; batches for one table are written one
// commit at a time, batches that wait for it together as one commit
// (group.go), batches for different tables concurrently.
type Sink struct {
	host *sdk.Host
	uri  *template.Template
	env  *tableEnv // what each table is given

	mu     sync.Mutex
	tables map[string]*table // by resolved URI, for the life of the instance

	stats counters
	// commits holds the newest version committed to each table.
	commits sdk.Commits
	ckpt    *checkpointStats
	comp    *compactStats
	// requests counts every table's store operations (objstore.Counted).
	requests objstore.Requests
}

// counters are the sink's own metrics.
type counters struct {
	commits, files, bytes, records, skipped, replays, conflicts atomic.Int64
	// commitBatches: batches those commits held; grouped: commits that
	// held more than one (group.go).
	commitBatches, grouped atomic.Int64
	// unmatched: committed records none of whose top-level fields named a
	// column (written as rows of nulls); empty: skipped empty payloads.
	unmatched, empty atomic.Int64
	// write_mode = "upsert" (upsert.go): keys upserted and deleted by
	// committed merges (each key's last change per commit), files read
	// and rewritten, and old rows dropped from them.
	upserts, deletes, readFiles, rewrittenFiles, droppedRows atomic.Int64
	// fsyncs: files and directories synced by file:// tables (data files,
	// commits, checkpoints), for the bench and the durability tests.
	fsyncs atomic.Int64
	// warned holds the topics whose first unmatched record was logged.
	warned sync.Map
	// ignored: top-level fields of committed records that name no column
	// (occurrences); added: columns added by schema_evolution.
	ignored, added atomic.Int64
	// ignoredNames: the (table, field name) pairs logged as ignored.
	ignoredNames onceNames
	// truncated: committed timestamp values cut to microseconds;
	// truncatedNames the (topic, column) pairs logged (timestamps.go).
	truncated      atomic.Int64
	truncatedNames onceNames
	// unhinted: the (table, field) pairs whose value schema type was not
	// used, logged (valueschema.go).
	unhinted onceNames
}

// maxOnceNames bounds the names a onceNames remembers (and so logs): a
// producer that puts ids in field names must not grow it forever.
const maxOnceNames = 1000

// onceNames remembers up to maxOnceNames names, so that a warning about a
// name is logged once, however many records bring it.
type onceNames struct {
	seen sync.Map
	n    atomic.Int64
}

// first reports whether name was not seen before and is still remembered
// (log it), and whether it is the one that filled the set (say that later
// names are only counted).
func (o *onceNames) first(name string) (first, last bool) {
	if o.n.Load() >= maxOnceNames {
		return false, false
	}
	if _, seen := o.seen.LoadOrStore(name, true); seen {
		return false, false
	}
	return true, o.n.Add(1) == maxOnceNames
}

// Open validates the storage settings (and create_table's) and, for a
// table_uri without placeholders, opens the table at once.
func (s *Sink) Open(ctx context.Context, cfg *Config, host *sdk.Host) error {
	storage, err := cfg.storageOptions()
	if err != nil {
		return err
	}
	if err := cfg.checkColumnTypes(); err != nil {
		return err
	}
	if err := cfg.checkSchemaEvolution(); err != nil {
		return err
	}
	if cfg.GroupLinger < 0 || cfg.GroupLinger > maxGroupLinger {
		return sdk.BadConfigf("plugin_config key %q: %s is not between 0s and %s", keyGroupLinger, cfg.GroupLinger, maxGroupLinger)
	}
	if cfg.GroupMaxBytes <= 0 {
		return sdk.BadConfigf("plugin_config key %q: %d is not a positive number of bytes", keyGroupMaxBytes, cfg.GroupMaxBytes)
	}
	compact, err := cfg.compactOptions()
	if err != nil {
		return err
	}
	tmpl, err := template.Parse(cfg.TableURI)
	if err != nil {
		return sdk.BadConfigf("plugin_config key %q: %v", keyTableURI, err)
	}
	derive, err := encode.ParseDerivations(cfg.DerivedColumns)
	if err != nil {
		return sdk.BadConfigf("plugin_config key %q: %v", keyDerivedColumns, err)
	}
	create, err := cfg.definition(derive)
	if err != nil {
		return err
	}
	chg, err := cfg.changeConfig()
	if err != nil {
		return err
	}
	if err := authenticate(ctx, &storage); err != nil {
		return err
	}
	s.host, s.uri = host, tmpl
	s.tables = map[string]*table{}
	s.ckpt = newCheckpointStats()
	s.comp = newCompactStats()
	s.env = &tableEnv{
		open: func(ctx context.Context, loc objstore.Location) (objstore.Store, error) {
			return objstore.Open(ctx, loc, storage)
		},
		log: host.Logger, spawn: host.Go,
		opts: tableOptions{exactlyOnce: cfg.ExactlyOnce, skipEmpty: cfg.SkipEmptyPayloads, metadataColumns: cfg.MetadataColumns,
			addColumns: cfg.SchemaEvolution == evolveAddColumns, derive: derive, create: create, groupMaxBytes: cfg.GroupMaxBytes, groupLinger: cfg.GroupLinger,
			typesFromSchema: cfg.ColumnTypes == columnTypesValueSchema, changes: chg},
		stats: &s.stats, ckpt: s.ckpt, requests: &s.requests, commits: &s.commits,
		compact: compact, compactStats: s.comp,
	}
	if !tmpl.IsStatic() {
		return nil
	}
	t, err := s.table(ctx, cfg.TableURI, nil)
	if err != nil {
		// A bad URI, a table, bucket or container that is missing, a key
		// the store refuses, or a table this writer must refuse, is a
		// configuration problem (the store answered no); an unreachable
		// store may heal, and so may a default credential chain that finds
		// nothing yet.
		var nb *objstore.NoBucketError
		switch {
		case isURIError(err) || errors.Is(err, deltalog.ErrNoTable) || errors.Is(err, deltalog.ErrNotWritable) || errors.As(err, &nb) ||
			errors.Is(err, objstore.ErrKeyRefused):
			return sdk.BadConfig(err)
		case objstore.NoCredentials(err):
			return sdk.Retry(fmt.Errorf("%w; %s", err, openAgain))
		}
		return err
	}
	// Columns metadata_columns or derived_columns cannot fill, and key
	// columns the table lacks, are the configuration's fault: say so now
	// rather than at the first batch.
	if err := t.checkFills(); err != nil {
		return err
	}
	return t.checkKeys()
}

// Consume appends one batch to its table: in a commit of its own, or of the
// group of batches that wait for the table with it (group.go).
func (s *Sink) Consume(ctx context.Context, b *sdk.Batch) error {
	if b.Schema != sdk.SchemaJSON {
		return sdk.Fatalf("Invalid payload type: topic %q has schema %q; the Delta sink takes json only", b.Topic, b.Schema)
	}
	if len(b.Records) == 0 {
		if b.Pred != nil {
			// Answered OK, it would let the partition's next batch be
			// written without its predecessor's records.
			return b.Pred.Wait(ctx)
		}
		return nil
	}
	if b.Redrive != nil && !s.env.opts.exactlyOnce {
		return sdk.Fatalf("a redrive of the dead letters of %q partition %d needs exactly_once = true: without a txn the Delta sink cannot tell a second redrive from the first", b.Redrive.Topic, b.Redrive.Partition)
	}
	if b.Redrive != nil && s.env.opts.changes != nil {
		// A dead letter is older than the changes of its partition applied
		// since it was rejected: putting it back would undo them.
		return sdk.Fatalf("%s = %q cannot redrive the dead letters of %q partition %d: a dead letter is older than the changes of its partition applied since, and applying it now would undo them; fix the cause and replay the source topic from before the dead letter instead (docs/delta.md, Redrive)",
			keyWriteMode, writeUpsert, b.Redrive.Topic, b.Redrive.Partition)
	}
	// ResolvePath, not Resolve: a topic such as "../other" must not move
	// its table out of the template's directory.
	uri, err := s.uri.ResolvePath(b.Topic)
	if err != nil {
		return sdk.Fatalf("plugin_config key %q: %v", keyTableURI, err)
	}
	t, err := s.table(ctx, uri, b.ValueSchema)
	if err != nil {
		if isURIError(err) || errors.Is(err, deltalog.ErrNotWritable) || errors.Is(err, errValueSchema) {
			return sdk.Fatal(err)
		}
		return sdk.Retry(err)
	}
	return t.write(ctx, b, s.appID(b))
}

// appID names the application transaction of one topic partition of this
// sink. Each part is escaped so that no two (key, topic, partition) share
// an id. A redrive batch's is its dead-letter partition's, under
// "redrive/": its txn version is a dead-letter offset (sdk.Batch.SeqOffset),
// which the original partition's txn cannot hold (docs/delta.md, Redrive).
// The extra segment keeps the two kinds apart: a topic name holds no "/".
func (s *Sink) appID(b *sdk.Batch) string {
	if r := b.Redrive; r != nil {
		// A redrive's own txn, per dead-letter partition (docs/delta.md,
		// Redrive).
		return RedriveAppID(s.host.Key, r.Topic, r.Partition)
	}
	return AppID(s.host.Key, b.Topic, b.Partition)
}

// table returns the cached table for a resolved URI, opening it on first use.
// vs is the value schema of the batch that asks (a table create_table makes
// from it).
func (s *Sink) table(ctx context.Context, uri string, vs []byte) (*table, error) {
	s.mu.Lock()
	t, ok := s.tables[uri]
	if !ok {
		t = newTable(uri, s.env)
		s.tables[uri] = t
	}
	s.mu.Unlock()
	if t.opened.Load() {
		return t, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.load(ctx, vs); err != nil {
		return nil, err
	}
	return t, nil
}

// LastCommits implements sdk.CommitReporter: the newest version this
// instance committed to each table it opened, by table URI.
func (s *Sink) LastCommits() []sdk.Commit { return s.commits.List() }

// Metrics reports the sink's own counters (the SDK adds its generic ones).
func (s *Sink) Metrics() map[string]any {
	s.mu.Lock()
	tables := len(s.tables)
	s.mu.Unlock()
	m := map[string]any{
		"tables":                 tables,
		"commits":                s.stats.commits.Load(),
		"commit_batches":         s.stats.commitBatches.Load(),
		"grouped_commits":        s.stats.grouped.Load(),
		"files_written":          s.stats.files.Load(),
		"bytes_written":          s.stats.bytes.Load(),
		"records_written":        s.stats.records.Load(),
		"records_skipped":        s.stats.skipped.Load(),
		"batches_replayed":       s.stats.replays.Load(),
		"commit_conflicts":       s.stats.conflicts.Load(),
		"records_unmatched":      s.stats.unmatched.Load(),
		"fields_ignored":         s.stats.ignored.Load(),
		"columns_added":          s.stats.added.Load(),
		"empty_payloads_skipped": s.stats.empty.Load(),
		"timestamps_truncated":   s.stats.truncated.Load(),
		"fsyncs":                 s.stats.fsyncs.Load(),
		"upserts":                s.stats.upserts.Load(),
		"deletes":                s.stats.deletes.Load(),
		"upsert_files_read":      s.stats.readFiles.Load(),
		"upsert_files_rewritten": s.stats.rewrittenFiles.Load(),
		"upsert_rows_dropped":    s.stats.droppedRows.Load(),
	}
	s.ckpt.addTo(m)
	s.comp.addTo(m)
	m["storage_get_requests"] = s.requests.Get.Load()
	m["storage_put_requests"] = s.requests.Put.Load()
	m["storage_list_requests"] = s.requests.List.Load()
	m["storage_delete_requests"] = s.requests.Delete.Load()
	return m
}

// Close releases the tables. Every Consume commits before it returns, so
// nothing is buffered between batches and there is nothing left to flush.
func (s *Sink) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uri, t := range s.tables {
		t.close()
		delete(s.tables, uri)
	}
	return nil
}

// isURIError reports whether err is a table URI no store can open.
func isURIError(err error) bool {
	var ue *objstore.URIError
	return errors.As(err, &ue)
}
