package redshift

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsparquet"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Group loads. With ConcurrentConsume, consume calls for different
// topic-partitions run at once; batches bound for one target table then
// share one load transaction instead of queueing on its staging table's
// LOCK one by one, each paying a COPY and a commit.
//
// Per table, at most one load runs at a time (the leader's). A batch that
// arrives while none runs is loaded at once, alone, exactly as when calls
// come one at a time (so a host that never calls concurrently sees nothing
// new). A batch that arrives while one runs queues (a follower): it
// encodes and uploads its files meanwhile, in its own call, so uploads run
// in parallel and overlap the running load. When the load ends, its leader
// hands the table to the first ready follower, which takes every ready
// batch queued, up to the bounds below, and loads them as one transaction:
// one COPY of a manifest listing all their files, one INSERT … SELECT,
// staging emptied, one commit. Each batch's call returns its own result.

// A grouped load takes queued batches in arrival order until one of these
// is reached (it always takes at least one). They bound what one failure
// sends back for replay, how long a load holds the staging table's lock,
// and the size of one COPY: Redshift loads the files of one COPY in
// parallel across its slices, and advises files of 1 MB to 1 GB.
const (
	groupMaxBatches = 256
	groupMaxRecords = 200_000
	groupMaxBytes   = 512 << 20 // Parquet bytes on S3
)

// cleanupParallel bounds the S3 deletes (or archives) after a grouped load.
const cleanupParallel = 8

// loadQueue is one table's queue of batches waiting for a grouped load.
type loadQueue struct {
	mu      sync.Mutex
	running bool      // a load into the table is running (its leader's)
	waiting []*member // queued, in arrival order, not yet taken by a load

	lastLoad    int           // batches the last load carried
	lastTook    time.Duration // how long the last grouped load's transaction took
	lastArrival time.Time     // when the newest member queued
	gatherFrom  time.Time     // when the last load ended
	// returning: how many batches the next gather still waits for (see
	// Gathering): one per partition the last grouped load answered OK,
	// less the batches that joined since.
	returning int
}

// Gathering. A batch that finds no load running would load alone at once;
// but once a table's batches have been arriving together (its last load
// carried more than one: a runtime flushing many partitions at once), the
// first to arrive would load alone and the rest, a moment behind, wait a
// whole load for the next one — on a cluster where a load costs a COPY
// and a commit of a second or more, every record then waits about two
// loads, and the partitions fall out of step. So such a batch leads a
// group instead: it uploads its files, then waits until no batch joined
// for gatherQuiet and those that joined are uploaded, gatherMax at most,
// and loads them all. The same when a load ends with batches queued: its
// own batches' partitions deliver their next ones a moment later, and the
// first queued batch gathers them before it leads. A table fed one batch
// at a time never waits. Nor does one that is the only consume call in
// progress; but when others are (a runtime starting, or resuming after a
// pause, with many partitions at once), the first batch to find the table
// idle gathers too, rather than loading alone while the rest queue behind
// it for a whole load (in tools/rsbench, the first batches' latency, above
// the steady state's p99).
//
// How many batches to wait for: one per partition the load that just ended
// answered OK, as many as the slots its answers freed in the runtime. With
// pipelined batches a partition may have its next batch queued already; its
// freed slot still brings the records that arrived after that one, and
// without waiting for them they waited a whole load more (tools/rsbench
// -depth 2: p99 5.9 s instead of 3.9 s). A quiet window alone ends the gather
// too early when the machine is busy: the answered calls return through
// the host and their partitions' next batches come back over 100 to 350 ms,
// with gaps longer than the window, and the ones behind a gap then missed
// the load, a whole load more for them. So a gather ends when that many
// batches joined (of any partition: a runtime whose max_in_flight is below
// the partitions gives a freed slot to whichever partition is due), no
// batch joined for gatherQuiet, and every batch that joined is uploaded; or
// at gatherMax. Partitions with nothing to send cost that gather gatherMax
// once: the count is dropped at the end of each gather.
//
// How long at most: a batch still uploading when the gather ends misses the
// load and waits a whole one more, so the gather waits for every batch that
// joined to be uploaded, up to half the last load's duration (gatherMin at
// least, gatherCap at most): less than that batch would lose by missing it.
// A fixed 200 ms left about 8 of 48 partitions out of every load: 40
// batches encoding and uploading at once take longer than that on a busy
// 2-core machine (tools/rsbench, docs/redshift.md "Group loads").
const (
	gatherQuiet = 5 * time.Millisecond
	gatherMin   = 200 * time.Millisecond
	gatherCap   = 5 * time.Second
	gatherTick  = 500 * time.Microsecond
)

// gatherMax is how long a gather waits at most (see Gathering). Called with
// q.mu held.
func (q *loadQueue) gatherMax() time.Duration {
	return min(max(q.lastTook/2, gatherMin), gatherCap)
}

// member is one batch in a table's queue. Its call owns the batch (which
// may be the host's memory, valid only during the call); leaders read only
// the copies below, never b, as the call may have returned (cancelled).
type member struct {
	b           *sdk.Batch
	topic       string // copied from b
	partition   uint64
	first, last uint64 // b's offsets
	records     int
	files       []upload
	bytes       int64

	// Under the queue's mu:
	ready bool      // files uploaded: a load may take it
	taken bool      // a load took it; it is answered through res
	lead  []*member // a load this member's call must run (it leads)
	// gatherLead: this member's call leads the next load, which it gathers
	// first (see Gathering) and then takes from the queue.
	gatherLead bool
	res        *memberRes // the answer of the load that took it
	// gone: the call returned (cancelled) after a load took it; that
	// load's leader then cleans up its files (see answer).
	gone bool
	wake chan struct{}
}

// upload is one Parquet file of a member on S3.
type upload struct {
	key  string
	size int64
	rows int
}

// memberRes is what a grouped load answers one member.
type memberRes struct {
	err     error
	skipped int // rows of this batch the target already had
	batches int // batches the load carried
}

func (m *member) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// load writes the checked records of b into t: alone at once when no load
// of t runs, else as a member of the next grouped load.
func (s *Sink) load(ctx context.Context, t *table, b *sdk.Batch, recs []rsparquet.Record, start string) error {
	if s.parsed.changes != nil && b.Pred != nil {
		return s.loadAfter(ctx, t, b, recs, start, b.Pred)
	}
	q := &t.queue
	q.mu.Lock()
	gather := false
	if !q.running {
		q.running = true
		if q.lastLoad <= 1 {
			q.lastLoad = 1
			q.mu.Unlock()
			return s.loadFirst(ctx, t, b, recs, start)
		}
		gather = true // this call leads the next group (see Gathering)
	}
	m := &member{b: b, topic: strings.Clone(b.Topic), partition: uint64(b.Partition), first: b.FirstOffset(), last: b.LastOffset(),
		records: len(recs), wake: make(chan struct{}, 1)}
	q.join(m)
	q.mu.Unlock()
	// Until this call has handed the lead to a group (or given the table
	// back), a panic in prepare or gather must not leave the table taken,
	// as the load-alone path's deferred handOff ensures, nor m waiting
	// unready, which every gather would wait gatherMax for.
	settled := false
	defer func() {
		if settled {
			return
		}
		q.mu.Lock()
		if !m.taken {
			q.remove(m)
		}
		q.mu.Unlock()
		if gather {
			s.handOff(q)
		}
	}()

	if err := s.prepare(ctx, m, recs, start); err != nil {
		settled = true
		q.mu.Lock()
		q.remove(m)
		q.mu.Unlock()
		if gather {
			s.handOff(q)
		}
		s.discard(ctx, m.files)
		return err
	}
	q.mu.Lock()
	m.ready = true
	if gather {
		q.mu.Unlock()
		q.gather(ctx)
		q.mu.Lock()
		m.lead = q.take()
	} else if !q.running {
		// The load that ran when this batch queued has ended, and no one
		// else was ready to take the table: this call leads.
		q.running = true
		m.lead = q.take()
	}
	settled = true // follow runs m.lead; runGroup hands the table on
	q.mu.Unlock()
	return s.follow(ctx, t, m)
}

// loadFirst loads b, which found no load of t running and t's batches
// arriving one at a time (q.running set for it): alone, per chunk, as if
// calls came one at a time. Except when other consume calls started while
// its one chunk uploaded (a runtime starting, or resuming after a pause,
// with many partitions at once): then it leads them as a gathered group,
// rather than loading alone while they queue behind it for a whole load
// (tools/rsbench: those first batches were the run's p99).
func (s *Sink) loadFirst(ctx context.Context, t *table, b *sdk.Batch, recs []rsparquet.Record, start string) error {
	q := &t.queue
	handed := false
	defer func() {
		// Also on a panic: the table must not stay taken, with the batches
		// queued behind it waiting for ever.
		if !handed {
			s.handOff(q)
		}
	}()
	if len(recs) > s.cfg.BatchSize {
		return s.loadAlone(ctx, t, b, recs, nil)
	}
	m := &member{b: b, topic: strings.Clone(b.Topic), partition: uint64(b.Partition), first: b.FirstOffset(), last: b.LastOffset(),
		records: len(recs), wake: make(chan struct{}, 1)}
	if err := s.prepare(ctx, m, recs, start); err != nil {
		s.discard(ctx, m.files)
		return err
	}
	if s.calls.Load() <= 1 {
		return s.loadAlone(ctx, t, b, recs, &m.files[0])
	}
	q.mu.Lock()
	m.ready = true
	q.join(m)
	m.gatherLead = true // follow gathers, takes and runs the group; runGroup hands t on
	handed = true
	q.mu.Unlock()
	return s.follow(ctx, t, m)
}

// Pipelined batches (ABI 1.5, sdk.Batch.Pred). A batch b sent while the
// batch before it of its partition (its predecessor) is unanswered:
//
//   - write_mode = "append": b loads like any batch, even before its
//     predecessor is answered and in another load. Rows are deduplicated on
//     their id, topic:partition:offset, and nothing records how far a
//     partition was written: if the predecessor fails after b committed,
//     its replay still inserts its own rows, and b's replay skips b's.
//     Nothing is lost or doubled, so Pred is consulted only for b's
//     answer: OK once the predecessor's was (afterPred in sink.go), so
//     that the runtime never keeps b's dead letters while it sends b's
//     records again.
//   - write_mode = "upsert": offsets_<table> holds one applied offset per
//     partition, and a load skips every change at or below it. Were b
//     applied before its predecessor, the watermark would pass the
//     predecessor's changes, and their replay would skip them: lost. So b
//     uploads its files meanwhile, waits for the predecessor's answer
//     (loadAfter), and joins the queue only after an OK; after anything
//     else it is not written and answers RETRY (Pending.Wait).

// loadAfter loads b, in upsert mode, once pred (its predecessor) was
// answered OK: its files are uploaded while pred's load runs, then it
// queues as a ready member, leading a load itself when none runs.
func (s *Sink) loadAfter(ctx context.Context, t *table, b *sdk.Batch, recs []rsparquet.Record, start string, pred *sdk.Pending) error {
	m := &member{b: b, topic: strings.Clone(b.Topic), partition: uint64(b.Partition), first: b.FirstOffset(), last: b.LastOffset(),
		records: len(recs), wake: make(chan struct{}, 1)}
	if err := s.prepare(ctx, m, recs, start); err != nil {
		s.discard(ctx, m.files)
		return err
	}
	if err := pred.Wait(ctx); err != nil {
		s.discard(ctx, m.files)
		return err
	}
	q := &t.queue
	q.mu.Lock()
	m.ready = true
	q.join(m)
	if !q.running {
		// As a batch that found no load running (load): alone when the
		// table's batches come one at a time, else it gathers first.
		q.running = true
		if q.lastLoad <= 1 {
			m.lead = q.take()
		} else {
			m.gatherLead = true
		}
	}
	q.mu.Unlock()
	return s.follow(ctx, t, m)
}

// follow waits for m's answer, running the loads m is handed meanwhile.
func (s *Sink) follow(ctx context.Context, t *table, m *member) error {
	q := &t.queue
	for {
		q.mu.Lock()
		if m.gatherLead {
			m.gatherLead = false
			q.mu.Unlock()
			q.gather(ctx)
			q.mu.Lock()
			m.lead = q.take()
		}
		if g := m.lead; g != nil {
			// Checked first: a load handed over must run (with a cancelled
			// context it fails fast and answers RETRY), or its members
			// would wait for ever.
			m.lead = nil
			q.mu.Unlock()
			s.runGroup(ctx, t, g)
			continue
		}
		if r := m.res; r != nil {
			q.mu.Unlock()
			return s.answered(ctx, t, m, r)
		}
		if err := ctx.Err(); err != nil {
			taken := m.taken
			if !taken {
				q.remove(m)
			}
			m.gone = true
			q.mu.Unlock()
			if !taken {
				s.discard(ctx, m.files)
			}
			// Taken by a load still running: its rows may commit, and a
			// replay skips them then.
			return sdk.Retry(fmt.Errorf("consume cancelled while waiting for the grouped load into %s: %w", rsql.Ident(t.name), err))
		}
		q.mu.Unlock()
		select {
		case <-m.wake:
		case <-ctx.Done():
		}
	}
}

// join queues m. Called with q.mu held.
func (q *loadQueue) join(m *member) {
	q.waiting = append(q.waiting, m)
	q.lastArrival = time.Now()
	q.returning = max(q.returning-1, 0)
}

// remove drops m from the waiting list. Called with q.mu held.
func (q *loadQueue) remove(m *member) {
	for i, w := range q.waiting {
		if w == m {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			return
		}
	}
}

// take removes the next group from the waiting list: ready members in
// arrival order, within the bounds. Called with q.mu held.
func (q *loadQueue) take() []*member {
	var g []*member
	records, bytes := 0, int64(0)
	kept := q.waiting[:0]
	full := false
	for _, m := range q.waiting {
		if m.ready && !full && (len(g) == 0 ||
			(len(g) < groupMaxBatches && records+m.records <= groupMaxRecords && bytes+m.bytes <= groupMaxBytes)) {
			m.taken = true
			g = append(g, m)
			records += m.records
			bytes += m.bytes
			continue
		}
		if m.ready {
			full = true // keep arrival order: no later batch overtakes it
		}
		kept = append(kept, m)
	}
	clear(q.waiting[len(kept):])
	q.waiting = kept
	return g
}

// gather waits, as the leader of the next load, until no batch joined q
// for gatherQuiet and every batch that joined has its files uploaded, or
// gatherMax passed, or ctx ended.
func (q *loadQueue) gather(ctx context.Context) {
	q.mu.Lock()
	deadline := time.Now().Add(q.gatherMax())
	q.mu.Unlock()
	for {
		q.mu.Lock()
		done := time.Since(q.lastArrival) >= gatherQuiet && time.Since(q.gatherFrom) >= gatherQuiet && q.returning == 0
		for _, w := range q.waiting {
			done = done && w.ready
		}
		if done || !time.Now().Before(deadline) || ctx.Err() != nil {
			q.returning = 0
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		time.Sleep(gatherTick)
	}
}

// expectReturns records a grouped load's duration and, when it committed,
// how many batches the next gather waits for: one per partition of g.
func (q *loadQueue) expectReturns(g []*member, took time.Duration, ok bool) {
	type partKey struct {
		topic     string
		partition uint64
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lastTook = took
	q.returning = 0
	if !ok {
		return // answered RETRY: redelivered after the runtime's backoff
	}
	parts := make(map[partKey]bool, len(g))
	for _, m := range g {
		parts[partKey{m.topic, m.partition}] = true
	}
	q.returning = len(parts)
}

// handOff ends the running load of q: the next group, if one is ready, goes
// to its first member's call to run.
func (s *Sink) handOff(q *loadQueue) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running = false
	if q.lastLoad > 1 {
		// Batches arrive together: the batches of the load that just
		// ended come back within milliseconds (their partitions are free
		// again), so the first ready batch gathers before it leads.
		for _, m := range q.waiting {
			if m.ready {
				q.running = true
				q.gatherFrom = time.Now()
				m.gatherLead = true
				m.signal()
				return
			}
		}
		return
	}
	if g := q.take(); len(g) > 0 {
		q.running = true
		g[0].lead = g
		g[0].signal()
	}
}

// prepare encodes m's records in chunks of batch_size and uploads each as a
// file, while the running load goes on.
func (s *Sink) prepare(ctx context.Context, m *member, recs []rsparquet.Record, start string) error {
	enc := s.encoders.Get().(*rsparquet.Encoder)
	defer s.encoders.Put(enc)
	for lo := 0; lo < len(recs); lo += s.cfg.BatchSize {
		hi := min(lo+s.cfg.BatchSize, len(recs))
		c := rsparquet.Chunk{Topic: m.topic, Partition: m.b.Partition, Records: recs[lo:hi], CreatedAt: start}
		key, size, err := s.upload(ctx, enc, c)
		if err != nil {
			return err
		}
		m.files = append(m.files, upload{key: key, size: size, rows: hi - lo})
		m.bytes += size
	}
	return nil
}

// runGroup loads the files of g in one transaction, answers every member,
// hands the table on, and then cleans up the files.
func (s *Sink) runGroup(ctx context.Context, t *table, g []*member) {
	var files []upload
	for _, m := range g {
		files = append(files, m.files...)
	}
	answered := false
	defer func() {
		if !answered {
			// The load panicked (the SDK turns that into FATAL for this
			// call and poisons the instance): no member may wait for an
			// answer that never comes, nor the table stay taken. It may
			// have committed; the replay skips what did.
			s.answer(t, g, loadResult{}, &InDoubtError{msg: "the load stopped on a panic"})
			s.handOff(&t.queue)
		}
	}()
	t.queue.mu.Lock()
	t.queue.lastLoad = len(g)
	t.queue.mu.Unlock()
	began := time.Now()
	res, manifest, err := s.loadFiles(ctx, t, g, files)
	if len(g) > 1 {
		t.queue.expectReturns(g, time.Since(began), err == nil)
	}
	orphans := s.answer(t, g, res, err)
	answered = true
	if err == nil {
		loaded := manifest
		if loaded == "" {
			loaded = files[0].key
		}
		s.loaded(t, loaded, res.inserted)
	}
	s.handOff(&t.queue)
	if manifest != "" {
		// Only the COPY reads the manifest; it is never archived.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		if derr := s.store.delete(cctx, manifest); derr != nil {
			s.stats.cleanupFailures.Add(1)
			s.log.Warn("deleting the manifest of a grouped load failed", "error", derr)
		}
		cancel()
	}
	if err != nil {
		s.discard(ctx, files)
		return
	}
	// Each member's call deletes (or archives) its own files before it
	// returns (answered): the leader's call, and with it its partition's
	// next batch, is not held up by the whole group's cleanup, which made
	// that batch miss the next load. Only the files of members whose call
	// had already returned are the leader's.
	s.finishAll(ctx, orphans)
}

// loadFiles runs the load transaction of a group: one file is COPYed as
// when loading alone; several through a manifest, which it uploads and
// returns the key of.
func (s *Sink) loadFiles(ctx context.Context, t *table, g []*member, files []upload) (loadResult, string, error) {
	if len(files) == 1 {
		copySQL := rsql.Copy(t.staging, s.parsed.layout.Staging(), rsql.S3URL(s.store.bucket, files[0].key), s.cfg.AWSIAMRole)
		res, err := s.db.load(ctx, t, t.filePlan(copySQL))
		s.stats.copyRetries.Add(int64(max(res.attempts-1, 0)))
		return res, "", err
	}
	list := make([]rsql.ManifestFile, len(files))
	for i, f := range files {
		list[i] = rsql.ManifestFile{URL: rsql.S3URL(s.store.bucket, f.key), Size: f.size}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return loadResult{}, "", sdk.Retryf("manifest name: %v", err)
	}
	key := s.store.key(id.String() + ".manifest")
	if err := s.store.put(ctx, key, rsql.Manifest(list), manifestType); err != nil {
		return loadResult{}, "", sdk.Retry(err)
	}
	copySQL := rsql.CopyManifest(t.staging, s.parsed.layout.Staging(), rsql.S3URL(s.store.bucket, key), s.cfg.AWSIAMRole)
	plan := t.filePlan(copySQL)
	if len(g) > 1 {
		plan = t.groupPlan(copySQL)
	}
	res, err := s.db.load(ctx, t, plan)
	s.stats.copyRetries.Add(int64(max(res.attempts-1, 0)))
	return res, key, err
}

// answer gives every member of g its result: on success the rows it had
// that the target already held, on failure the load's error as RETRY (a
// replay is harmless: the INSERT skips ids already loaded). It returns the
// files of the members whose call is gone, which no call will clean up.
func (s *Sink) answer(t *table, g []*member, res loadResult, err error) []upload {
	out := make([]*memberRes, len(g))
	if err != nil {
		var doubt *InDoubtError
		what := "did not commit"
		if errors.As(err, &doubt) {
			what = "may have committed"
		}
		for i := range g {
			out[i] = &memberRes{err: sdk.Retry(fmt.Errorf("the grouped load of %d batches into %s %s: %w; %s",
				len(g), rsql.Ident(t.name), what, err, replaySkips(t.upsert != nil)))}
		}
	} else {
		copied := 0
		for i, m := range g {
			copied += m.records
			out[i] = &memberRes{batches: len(g)}
		}
		if len(g) == 1 {
			out[0].skipped = int(res.skipped(int64(copied)))
		} else {
			attribute(g, out, res.dups)
		}
		s.stats.loads.Add(1)
		s.stats.loadBatches.Add(int64(len(g)))
		for _, m := range g {
			s.stats.chunks.Add(int64(len(m.files)))
		}
		s.stats.rowsCopied.Add(int64(copied))
		s.stats.rowsInserted.Add(res.inserted)
		s.stats.rowsSkipped.Add(res.skipped(int64(copied)))
	}
	q := &t.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	var orphans []upload
	for i, m := range g {
		m.res = out[i]
		m.signal()
		if m.gone {
			orphans = append(orphans, m.files...)
		}
	}
	return orphans
}

// attribute counts each member's skipped rows from the staged ids the
// target already had (topic:partition:offset). An id of no member (a row
// another writer left in staging) counts for none.
func attribute(g []*member, out []*memberRes, dups []string) {
	for _, id := range dups {
		j := strings.LastIndexByte(id, ':')
		if j < 0 {
			continue
		}
		i := strings.LastIndexByte(id[:j], ':')
		if i < 0 {
			continue
		}
		part, err1 := strconv.ParseUint(id[i+1:j], 10, 32)
		off, err2 := strconv.ParseUint(id[j+1:], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		for k, m := range g {
			if m.topic == id[:i] && m.partition == part && off >= m.first && off <= m.last {
				out[k].skipped = min(out[k].skipped+1, m.records)
				break
			}
		}
	}
}

// answered ends a member's call with its load's result, deleting (or
// archiving) its files once loaded.
func (s *Sink) answered(ctx context.Context, t *table, m *member, r *memberRes) error {
	if r.err != nil {
		return r.err // the leader discards the files of a failed load
	}
	s.finishAll(ctx, m.files)
	m.b.Skipped(r.skipped)
	level := slog.LevelDebug
	if s.cfg.VerboseLogging {
		level = slog.LevelInfo
	}
	s.log.Log(ctx, level, "batch loaded", "topic", m.b.Topic, "table", t.name, "records", m.records,
		"offsets", fmt.Sprintf("%d..%d", m.b.FirstOffset(), m.b.LastOffset()), "chunks", len(m.files),
		"load_batches", r.batches, "skipped_duplicates", r.skipped)
	return nil
}

// discard deletes files of a load that did not commit (or never ran).
func (s *Sink) discard(ctx context.Context, files []upload) {
	for _, f := range files {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		if err := s.store.delete(cctx, f.key); err != nil {
			s.stats.cleanupFailures.Add(1)
			s.log.Warn("could not delete the file of a failed load", "error", err)
		}
		cancel()
	}
}

// finishAll deletes or archives the files of a committed load, a few at a
// time.
func (s *Sink) finishAll(ctx context.Context, files []upload) {
	sem := make(chan struct{}, cleanupParallel)
	var wg sync.WaitGroup
	for _, f := range files {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.finish(ctx, f.key)
		}()
	}
	wg.Wait()
}
