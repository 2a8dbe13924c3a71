package redshift

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsparquet"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/retry"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Name is the plugin name describe() reports.
const Name = "redshift_sink"

// Plugin is the registration of the sink, for the library's main package
// (sdk.Register(redshift.Plugin())) and for tests that open it in-process.
//
// The sink stores the bytes as given, whatever the batch's schema, so an
// empty payload (a tombstone of a compacted topic) or one that is not JSON
// lands as it is. It checks only what its columns cannot hold
// (rsparquet.Check), hence ValidatesPayloads; with payload_format = "super"
// that includes parsing every payload as JSON_PARSE would. A redrive batch
// (ABI 1.4) keeps its records' original coordinates, so in append mode
// their ids are the ones the first delivery would have written and the
// load's INSERT skips those already there: Redrive needs nothing more. In
// write_mode = "upsert" Consume refuses a redrive batch FATAL: its offsets
// are at or below the applied offset, so the load would skip every change
// as a replay, and a dead letter is older than the changes applied since.
//
// Pipelined: a batch may arrive while the one before it of its partition is
// unanswered (sdk.Batch.Pred). In append mode it loads at once (ids dedupe a
// replay of either); in upsert mode it is applied only after that one was
// answered OK (group.go, "Pipelined batches").
func Plugin() sdk.Plugin[Config] {
	return sdk.Plugin[Config]{Name: Name, New: func() sdk.Sink[Config] { return &Sink{} }, ValidatesPayloads: true,
		Metrics: metrics, ConcurrentConsume: true, Redrive: true, Pipelined: true}
}

// openTimeout bounds the database work open() does: SELECT 1 and, for a
// static target_table, creating and checking the tables.
const openTimeout = 2 * time.Minute

// sqlStateUnknownDatabase is invalid_catalog_name: the database of the
// connection string does not exist.
const sqlStateUnknownDatabase = "3D000"

// cleanupTimeout bounds deleting or archiving one file after its load; it
// runs even when the batch's context is done.
const cleanupTimeout = 30 * time.Second

// createdAtLayout is RFC 3339 in UTC with a fixed three-digit fraction, so
// created_at strings sort in time order.
const createdAtLayout = "2006-01-02T15:04:05.000Z07:00"

// Sink loads batches into Redshift through S3 and COPY. It implements
// sdk.Sink[Config] and sdk.MetricsReporter. Consume calls may run
// concurrently (ConcurrentConsume); batches for one table then share load
// transactions (group.go).
type Sink struct {
	cfg      *Config
	parsed   *parsed // what validate derived from cfg
	log      *slog.Logger
	db       *db
	store    *store
	encoders sync.Pool // *rsparquet.Encoder, one per call encoding
	now      func() time.Time
	stats    counters
	commits  sdk.Commits // the newest load committed per table

	// tablesMu is held while a name is checked for the first time, so
	// that one table has one queue (group.go); calls for other tables
	// wait only then.
	tablesMu sync.Mutex
	tables   map[string]*table // by resolved name; only tables that passed the check

	mu      sync.Mutex         // guards records
	records []rsparquet.Record // a buffer kept between calls

	// calls counts the consume calls in progress (group.go: a batch that
	// finds no load running loads alone only when it is the only one).
	calls atomic.Int64
}

// Open validates the configuration, connects, builds the S3 client, and
// prepares a static target table.
func (s *Sink) Open(ctx context.Context, c *Config, host *sdk.Host) error {
	p, warnings, err := c.validate()
	if err != nil {
		return err
	}
	s.cfg, s.parsed, s.log, s.now = c, p, host.Logger, time.Now
	for _, w := range warnings {
		s.log.Warn(w)
	}
	if schemaQualified(p.table) {
		// The dot would be part of the name (quoted verbatim), so the table
		// the operator meant can never be found; say so before creating a
		// wrongly named table.
		return sdk.BadConfig(&rsql.NotFoundError{Table: p.table.String()})
	}

	pcfg, password, err := poolConfig(c.ConnectionString, c.MaxConnections, c.StatementTimeout)
	if err != nil {
		return sdk.BadConfigf("%s: %v", keyConnectionString, err)
	}
	host.Redact(password)
	mode := tlsMode(&pcfg.ConnConfig.Config)
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	auth := authPassword
	if p.iam {
		// The temporary passwords are not registered for redaction: one per
		// refresh would grow the list for as long as the sink runs. None
		// of them reaches a log line or an error (the IAM tests check).
		if _, err := useIAM(octx, c, pcfg, s.log); err != nil {
			return err
		}
		auth = authIAM
	}
	pool, err := pgxpool.NewWithConfig(octx, pcfg)
	if err != nil {
		return sdk.BadConfigf("%s: %v", keyConnectionString, err)
	}
	if _, err := pool.Exec(octx, "SELECT 1"); err != nil {
		pool.Close()
		if msg := tlsOpenError(err, mode); msg != "" {
			// A certificate that does not verify, or a server without TLS
			// when sslmode requires it, fails the same way every time.
			return sdk.BadConfigf("%s", msg)
		}
		if retry.IsAuth(err) && p.iam {
			return sdk.BadConfigf("Failed to connect to Redshift: it refused the IAM credentials issued for %s: %s", c.iamTarget(pcfg.ConnConfig).Operation(), err)
		}
		if retry.SQLState(err) == sqlStateUnknownDatabase {
			// The cluster answered that the database does not exist: as
			// for a missing static table, only the configuration (or the
			// operator creating the database) changes that.
			return sdk.BadConfigf("Failed to connect to Redshift: %s: %s", keyConnectionString, describeErr(err))
		}
		if retry.IsAuth(err) {
			// The same credentials will be refused on every attempt.
			return sdk.BadConfigf("Failed to connect to Redshift: %s: %s", keyConnectionString, describeErr(err))
		}
		return sdk.Retryf("Failed to connect to Redshift: %s", describeErr(err))
	}
	s.db = &db{
		pool:    pool,
		policy:  retry.Policy{MaxAttempts: p.attempts, Delay: p.retryDelay},
		timeout: c.StatementTimeout,
		log:     s.log,
	}
	s.store, err = newStore(octx, c, p.prefix)
	if err != nil {
		pool.Close()
		return sdk.BadConfig(err)
	}
	// The file is COPYed into the staging table, so it has its columns.
	s.encoders.New = func() any { return rsparquet.NewEncoder(p.layout.Staging()) }
	s.tables = map[string]*table{}
	if p.table.IsStatic() {
		if _, err := s.table(octx, p.table.String()); err != nil {
			pool.Close()
			var te *tableError
			if errors.As(err, &te) {
				return sdk.BadConfig(err)
			}
			return err
		}
	}
	s.log.Info("Redshift sink opened", keyTargetTable, p.table.String(), "columns", fmt.Sprint(p.layout.Names()),
		keyBatchSize, c.BatchSize, "bucket", c.S3Bucket, "prefix", p.prefix, "sslmode", mode, keyAuth, auth)
	return nil
}

// table returns the checked table for a resolved name, creating and
// checking it on first use. Failures are not cached: after the operator
// fixes the table, the redelivered batch checks again. Concurrent calls
// wait for the first use of a name to finish.
func (s *Sink) table(ctx context.Context, name string) (*table, error) {
	s.tablesMu.Lock()
	defer s.tablesMu.Unlock()
	if t, ok := s.tables[name]; ok {
		return t, nil
	}
	if err := rsql.CheckTableName(name); err != nil {
		return nil, sdk.Fatalf("%s: %v", keyTargetTable, err)
	}
	t, err := s.db.ensureTable(ctx, name, s.parsed.layout)
	if err != nil {
		// A missing or mismatched table is the operator's to fix; RETRY
		// keeps the offset while they do (the runtime stops the sink after
		// five attempts either way).
		return nil, sdk.Retry(err)
	}
	s.tables[name] = t
	return t, nil
}

// Consume loads one batch: resolve the table, check every record fits,
// then per chunk of batch_size records encode, upload, load, clean up.
// The first failing chunk fails the batch; chunks loaded before it are
// skipped as duplicates when the runtime redelivers.
func (s *Sink) Consume(ctx context.Context, b *sdk.Batch) error {
	if len(b.Records) == 0 {
		return nil
	}
	s.calls.Add(1)
	defer s.calls.Add(-1)
	start := s.now()
	name, err := s.parsed.table.Resolve(b.Topic)
	if err != nil {
		return sdk.Fatalf("%s: %v", keyTargetTable, err)
	}
	if s.parsed.changes != nil && b.Redrive != nil {
		// The dead letters' original offsets are at or below the applied
		// offset of their partition, so the load would skip them all as a
		// replay and answer OK for nothing; and applying a change after
		// the newer ones of its key would undo them. Neither is a write.
		return sdk.Fatalf("%s = %q cannot redrive dead letters (%d records of topic %q partition %d from %q partition %d): "+
			"a dead letter is older than the changes of its partition applied since, so applying it now could undo newer changes of its key; "+
			"fix the cause, set the partition's applied_offset in %s below the dead letter's offset, and replay the source partition from there instead",
			keyWriteMode, writeUpsert, len(b.Records), b.Topic, b.Partition, b.Redrive.Topic, b.Redrive.Partition, rsql.Ident(rsql.Offsets(name)))
	}
	t, err := s.table(ctx, name)
	if err != nil {
		return err
	}

	// Keys and payloads stay borrowed from the host: they are only read
	// until Encode has copied them into the file, within this call.
	s.mu.Lock()
	recs := s.records[:0]
	s.records = nil // a concurrent call builds its own
	s.mu.Unlock()
	for i := range b.Records {
		r := &b.Records[i]
		recs = append(recs, rsparquet.Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Payload: r.Payload})
	}
	defer func() {
		clear(recs)
		s.mu.Lock()
		s.records = recs[:0]
		s.mu.Unlock()
	}()
	if s.parsed.changes != nil {
		// write_mode = upsert: each record becomes a change; one that is
		// none is a record error, rejected alone or failing the batch.
		if err := s.readChanges(b, recs); err != nil {
			return err
		}
	}
	createdAt := start.UTC().Format(createdAtLayout)
	all := rsparquet.Chunk{Topic: b.Topic, Partition: b.Partition, CreatedAt: createdAt, Records: recs}
	// A record that can never be loaded is rejected alone when the host
	// accepts that (ABI 1.1), else it fails the batch as the spec says. The
	// check is deterministic, so a replay rejects the same records.
	var refused error
	err = rsparquet.CheckEach(s.parsed.layout, t.limits, all, func(i int, e *rsparquet.RecordError) {
		if b.Rejected(i) {
			return // not a change (readChanges): rejected already
		}
		reason := sdk.RejectEncoding
		switch {
		case e.TooLong():
			reason = sdk.RejectSize
		case e.Value:
			reason = sdk.RejectValue
		}
		if refused == nil && !b.Reject(i, reason, e) {
			refused = e
		}
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return sdk.Fatal(err)
	}
	if rej := len(b.Rejections()); rej > 0 {
		kept := recs[:0]
		for i := range recs {
			if !b.Rejected(i) {
				kept = append(kept, recs[i])
			}
		}
		clear(recs[len(kept):])
		recs = kept
		s.log.Warn("records rejected: they can never be loaded", "topic", b.Topic, "table", name, "rejected", rej)
		if len(recs) == 0 {
			// Nothing to load, but a pipelined batch is answered OK
			// only after the one before it (group.go, Pipelined).
			return s.afterPred(ctx, b)
		}
	}

	if err := s.load(ctx, t, b, recs, createdAt); err != nil {
		return err
	}
	return s.afterPred(ctx, b)
}

// afterPred answers a pipelined batch (b.Pred set) that was loaded, or had
// nothing to load: OK only once the batch before it was answered OK, else
// RETRY. In append mode its rows may be committed by then; its replay
// skips them on their ids. The rule of docs/abi.md is about the answer
// too: a runtime keeps a batch's dead letters and offset on its OK, and
// needs every batch before it answered OK to do so.
func (s *Sink) afterPred(ctx context.Context, b *sdk.Batch) error {
	if b.Pred == nil {
		return nil
	}
	return b.Pred.Wait(ctx)
}

// loadAlone loads one batch by itself, per chunk of batch_size records:
// encode, upload, load, clean up. The first failing chunk fails the batch;
// chunks loaded before it are skipped as duplicates when the runtime
// redelivers.
//
// uploaded, when not nil, is the batch's one chunk, already uploaded (see
// load in group.go).
func (s *Sink) loadAlone(ctx context.Context, t *table, b *sdk.Batch, recs []rsparquet.Record, uploaded *upload) error {
	start := s.now()
	var inserted, copied, skipped int64
	chunks := 0
	total := (len(recs) + s.cfg.BatchSize - 1) / s.cfg.BatchSize
	for lo := 0; lo < len(recs); lo += s.cfg.BatchSize {
		hi := min(lo+s.cfg.BatchSize, len(recs))
		chunk := rsparquet.Chunk{Topic: b.Topic, Partition: b.Partition, Records: recs[lo:hi],
			CreatedAt: s.now().UTC().Format(createdAtLayout)}
		var n, skip int64
		var err error
		if uploaded != nil {
			n, skip, err = s.loadFile(ctx, t, uploaded.key, hi-lo)
		} else {
			n, skip, err = s.loadChunk(ctx, t, chunk)
		}
		if err != nil {
			return chunkFailed(err, chunks, total, s.parsed.changes != nil)
		}
		chunks++
		inserted += n
		skipped += skip
		copied += int64(hi - lo)
	}
	// The rows the INSERT left out had ids the target already had (upsert:
	// changes at or below the applied offset): a replay, written before.
	b.Skipped(int(skipped))
	level := slog.LevelDebug
	if s.cfg.VerboseLogging {
		level = slog.LevelInfo
	}
	s.log.Log(ctx, level, "batch loaded", "topic", b.Topic, "table", t.name, "records", len(recs),
		"offsets", fmt.Sprintf("%d..%d", b.FirstOffset(), b.LastOffset()), "chunks", chunks,
		"inserted", inserted, "skipped_duplicates", skipped, "duration", s.now().Sub(start))
	return nil
}

// chunkFailed says what a batch whose chunk committed+1 of total failed
// leaves in the table. Chunks committed before it stay, and a load whose
// answers were lost may have committed too: an operator must not read
// "nothing written" into the message. The replay deduplicates either way.
func chunkFailed(err error, committed, total int, upsert bool) error {
	before := fmt.Sprintf("%d of the %d chunks committed before it and stay", committed, total)
	switch {
	case committed == 0:
		before = "no chunk committed before it"
	case committed == 1:
		before += "s"
	}
	var doubt *InDoubtError
	if errors.As(err, &doubt) {
		return fmt.Errorf("Redshift chunk %d of %d may have committed: %w; %s; %s",
			committed+1, total, err, before, replaySkips(upsert))
	}
	if committed > 0 {
		what := "their ids"
		if upsert {
			what = "their changes, applied"
		}
		return fmt.Errorf("%w; %s, and the replay skips %s", err, before, what)
	}
	return err
}

// replaySkips says what makes a replay harmless, in the message of a load
// that failed.
func replaySkips(upsert bool) string {
	if upsert {
		return "the replay skips the changes already applied (offsets_<table>)"
	}
	return "the replay skips the ids already in the table"
}

// loadChunk encodes, uploads, loads and cleans up one chunk, and returns
// the rows inserted and the rows left out as written before.
func (s *Sink) loadChunk(ctx context.Context, t *table, c rsparquet.Chunk) (int64, int64, error) {
	enc := s.encoders.Get().(*rsparquet.Encoder)
	key, _, err := s.upload(ctx, enc, c)
	s.encoders.Put(enc)
	if err != nil {
		return 0, 0, err
	}
	return s.loadFile(ctx, t, key, len(c.Records))
}

// loadFile loads, and then cleans up, one uploaded file of rows records
// alone; it returns the rows inserted and the rows left out as written
// before.
func (s *Sink) loadFile(ctx context.Context, t *table, key string, records int) (int64, int64, error) {
	copySQL := rsql.Copy(t.staging, s.parsed.layout.Staging(), rsql.S3URL(s.store.bucket, key), s.cfg.AWSIAMRole)
	res, err := s.db.load(ctx, t, t.filePlan(copySQL))
	s.stats.copyRetries.Add(int64(max(res.attempts-1, 0)))
	if err != nil {
		// Nothing committed refers to the file: a load that may have
		// committed copied the rows out of it, and one still running on
		// the server either has too or fails its COPY and rolls back.
		s.discard(ctx, []upload{{key: key}})
		return 0, 0, sdk.Retry(err)
	}
	rows := int64(records)
	skipped := res.skipped(rows)
	s.stats.chunks.Add(1)
	s.stats.loads.Add(1)
	s.stats.loadBatches.Add(1)
	s.stats.rowsCopied.Add(rows)
	s.stats.rowsInserted.Add(res.inserted)
	s.stats.rowsSkipped.Add(skipped)
	s.loaded(t, key, res.inserted)
	s.finish(ctx, key)
	return res.inserted, skipped, nil
}

// upload encodes one chunk with enc and puts it to S3 under a new name; it
// returns the key and the file's size.
func (s *Sink) upload(ctx context.Context, enc *rsparquet.Encoder, c rsparquet.Chunk) (string, int64, error) {
	data, err := enc.Encode(c)
	if err != nil {
		return "", 0, sdk.Retry(err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", 0, sdk.Retryf("file name: %v", err)
	}
	key := s.store.key(id.String() + ".parquet")
	if err := s.store.put(ctx, key, data, parquetType); err != nil {
		return "", 0, sdk.Retry(err)
	}
	s.stats.filesUploaded.Add(1)
	s.stats.s3Bytes.Add(int64(len(data)))
	return key, int64(len(data)), nil
}

// finish deletes or archives a loaded file. Failures are warnings: the rows
// are committed, and an orphan file is only storage.
func (s *Sink) finish(ctx context.Context, key string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if s.cfg.Archive {
		dst, err := s.store.archive(cctx, key)
		if err != nil {
			s.stats.cleanupFailures.Add(1)
			s.log.Warn("archiving the loaded file failed", "error", err)
			return
		}
		s.stats.filesArchived.Add(1)
		s.log.Debug("file archived", "key", dst)
		return
	}
	if err := s.store.delete(cctx, key); err != nil {
		s.stats.cleanupFailures.Add(1)
		s.log.Warn("deleting the loaded file failed", "error", err)
		return
	}
	s.stats.filesDeleted.Add(1)
}

// Close releases the pool. Every batch is committed or failed before
// Consume returns, so there is nothing to flush.
func (s *Sink) Close(ctx context.Context) error {
	if s.db != nil {
		s.db.pool.Close()
	}
	return nil
}
