package delta

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

// Compaction (compaction = true), off the commit path.
//
// Each table gets a goroutine (Host.Go, so closing the instance stops it)
// that keeps its own snapshot and file list (deltalog.State), advanced
// from the log every check. It takes the table's lock only for a moment
// after each commit, to hand the commit to the checkpointer: a batch never
// waits for a compaction. Each check:
//
//  1. groups the live files by partition value; a partition value is
//     ripe when nothing was added to it for compaction_idle (the newest
//     add.modificationTime, whoever wrote it) and it has at least
//     compaction_min_files small files (under half of
//     compaction_target_file_size, without deletion vectors, row ids or
//     a clustering provider);
//  2. bin-packs a ripe partition value's small files, oldest first, into
//     bins of up to compaction_target_file_size (by input bytes); a bin of
//     one file is left alone;
//  3. reads each bin's files and writes one file per bin: their data
//     pages spliced into one row group and their add.stats combined
//     (encode.Splice, deltalog's ObserveStats), or, for files that do not
//     qualify, every value decoded and encoded again with a batch's writer
//     settings and the stats collected anew (encode.Merge); files whose
//     Parquet schemas differ, from before and after a schema change, go
//     to separate files;
//  4. commits the partition value's removes (dataChange = false) of the
//     files read and adds (dataChange = false) of the files written in
//     one commit (deltalog.CommitCompaction). A winner that removed a file
//     it read aborts it and its new files are deleted; winning appends
//     only move it to the next version. The next partition value is
//     planned afresh from the log as of that commit.
//
// One compaction runs at a time per instance (the semaphore bounds memory
// to about one target file plus its inputs, and CPU to one core).
// Appends never fail because of a compaction: a blind append that loses
// the race to a compaction commit retries at the next version like after
// any winner (deltalog.ResolveConflict ignores removes).
//
// Crash safety: files are written before the commit that names them; a
// process killed at any step leaves at most files no commit references
// (orphans), as a batch killed before its commit does. Removed files are
// never deleted: readers of older versions still read them, and only
// VACUUM (another engine's, after delta.deletedFileRetentionDuration)
// deletes them and any orphans. Checkpoints carry the removes as
// tombstones until that retention expires.

// compactOptions are the compaction_* settings; nil when compaction is off.
type compactOptions struct {
	target   int64
	minFiles int
	idle     time.Duration
}

// compactStats are the sink-wide compaction counters, and what every
// table's compactor shares.
type compactStats struct {
	commits, aborts, failures, lostRaces atomic.Int64
	filesRemoved, filesAdded             atomic.Int64
	bytesRead, bytesWritten              atomic.Int64
	cpuMicros, wallMicros                atomic.Int64
	merged                               atomic.Int64 // files rewritten value by value, not spliced

	sem       chan struct{} // one compaction at a time per instance
	createdBy string
	now       func() time.Time
	// checkEvery overrides the pause between checks (tests); 0: from
	// compaction_idle.
	checkEvery time.Duration
	// beforeCommit, when set, runs between writing the files and
	// committing them (tests: a crash or a racing writer there).
	beforeCommit func(ctx context.Context) error
}

func newCompactStats() *compactStats {
	return &compactStats{sem: make(chan struct{}, 1), createdBy: engineInfo(), now: time.Now}
}

// addTo adds the counters to the sink's metrics.
func (s *compactStats) addTo(m map[string]any) {
	if s == nil { // a Sink not opened
		s = &compactStats{}
	}
	m["compactions"] = s.commits.Load()
	m["compaction_aborts"] = s.aborts.Load()
	m["compaction_failures"] = s.failures.Load()
	m["compaction_files_removed"] = s.filesRemoved.Load()
	m["compaction_files_added"] = s.filesAdded.Load()
	m["compaction_files_reencoded"] = s.merged.Load()
	m["compaction_bytes_read"] = s.bytesRead.Load()
	m["compaction_bytes_written"] = s.bytesWritten.Load()
	m["compaction_cpu_ms"] = s.cpuMicros.Load() / 1000
	m["compaction_ms"] = s.wallMicros.Load() / 1000
}

// compactor compacts one table.
type compactor struct {
	uri   string
	store objstore.Store
	log   *slog.Logger
	opts  compactOptions
	stats *compactStats

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	// committed, when set, hands each compaction commit to the table's
	// checkpointer, so that a checkpoint due at its version is written.
	committed func(*deltalog.Snapshot, []deltalog.Action)

	// Owned by the goroutine.
	snap    *deltalog.Snapshot
	state   *deltalog.State
	skipped string // the reason the table is not compacted, logged once
}

// startCompactor starts the compactor of table t (just loaded, with its
// store); nil when compaction is off.
func startCompactor(t *table, store objstore.Store) *compactor {
	env := t.env
	if env.compact == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &compactor{uri: t.uri, store: store, log: env.log, opts: *env.compact, stats: env.compactStats, ctx: ctx, cancel: cancel,
		committed: t.compactionCommitted}
	env.spawn(c.run)
	return c
}

// compactionCommitted tells the table's checkpointer of a compaction
// commit (the checkpointer only hears of the batches' commits otherwise).
// It waits for the batch in progress, if any: the compactor can wait.
func (t *table) compactionCommitted(snap *deltalog.Snapshot, actions []deltalog.Action) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ckpt != nil && t.snap != nil && t.snap.Metadata.ID == snap.Metadata.ID {
		t.ckpt.committed(snap, actions)
	}
}

// stop ends the goroutine, abandoning a compaction in progress (its new
// files are deleted unless its commit may have landed).
func (c *compactor) stop() {
	if c != nil {
		c.cancel()
	}
}

// every is the pause between checks: a quarter of compaction_idle, within
// [1s, 1m].
func (c *compactor) every() time.Duration {
	if c.stats.checkEvery > 0 {
		return c.stats.checkEvery
	}
	return min(max(c.opts.idle/4, time.Second), time.Minute)
}

func (c *compactor) run(hostCtx context.Context) {
	wake := func() <-chan time.Time { return time.After(c.every()) }
	background(c.ctx, hostCtx, wake, func(ctx context.Context) bool {
		if err := c.safeCheck(ctx); err != nil && ctx.Err() == nil {
			c.stats.failures.Add(1)
			c.log.Warn("Delta compaction failed; it is tried again at the next check", "table", c.uri, "error", err)
		}
		return true
	})
}

// safeCheck is check with a panic turned into a failure (Host.Go would
// poison the instance); the state is loaded afresh next time.
func (c *compactor) safeCheck(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			c.snap, c.state = nil, nil
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return c.check(ctx)
}

// check brings the state up to date and compacts every ripe partition value.
func (c *compactor) check(ctx context.Context) error {
	if err := c.sync(ctx); err != nil || c.snap == nil {
		return err
	}
	if reason := c.unsupported(); reason != c.skipped {
		if c.skipped = reason; reason != "" {
			c.log.Info("Delta compaction skips the table", "table", c.uri, "reason", reason)
		}
	}
	if c.skipped != "" {
		return nil
	}
	// One partition value per commit, planned afresh from the state after
	// each: a plan's files are live at the state's version, and only the
	// commits after that version are checked against them.
	for range maxCommitsPerCheck {
		plans := c.plan()
		if len(plans) == 0 {
			return nil
		}
		done, err := c.compact(ctx, plans[0])
		if err != nil {
			c.snap, c.state = nil, nil
			if errors.Is(err, deltalog.ErrCompactionConflict) || errors.Is(err, deltalog.ErrConcurrentModification) {
				// Someone else rewrote or deleted what we read: read the
				// log again at the next check and plan afresh.
				c.stats.aborts.Add(1)
				c.log.Info("Delta compaction abandoned: a concurrent commit changed the files it read", "table", c.uri, "error", err)
				return nil
			}
			return err
		}
		if !done || c.snap == nil {
			// Nothing to commit after all (files alone with their schema),
			// or the state could not follow the commit: next check.
			return nil
		}
	}
	return nil
}

// maxCommitsPerCheck bounds the compaction commits of one check, so that
// a table with many ripe partition values still refreshes its view of the
// log between them every so often.
const maxCommitsPerCheck = 100

// unsupported says why the table is not compacted, or "".
func (c *compactor) unsupported() string {
	if err := c.snap.Writable(); err != nil {
		return err.Error()
	}
	if m := c.snap.Metadata.Configuration["delta.columnMapping.mode"]; m != "" && m != "none" {
		return "column mapping (files name columns by physical names)"
	}
	return ""
}

// sync loads or advances the snapshot and the state to the newest version.
// No table yet (create_table): nothing to do.
func (c *compactor) sync(ctx context.Context) error {
	opts := &deltalog.LoadOptions{Logger: c.log}
	if c.snap != nil {
		snap, err := c.snap.Update(ctx, c.store)
		if err == nil && snap.Metadata.ID == c.snap.Metadata.ID {
			if _, err = c.state.Update(ctx, c.store, snap.Version); err == nil {
				c.snap = snap
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.snap, c.state = nil, nil // replaced, cleaned up behind a checkpoint, …: load afresh
	}
	snap, err := deltalog.Load(ctx, c.store, opts)
	if errors.Is(err, deltalog.ErrNoTable) {
		return nil
	}
	if err != nil {
		return err
	}
	st, err := deltalog.LoadStateAt(ctx, c.store, snap.Version, opts)
	if err != nil {
		return err
	}
	c.snap, c.state = snap, st
	return nil
}

// part is one partition value's compaction: its bins of files.
type part struct {
	values deltalog.PartitionValues
	bins   [][]*deltalog.Add
}

// plan finds the ripe partition values and bin-packs their small files.
func (c *compactor) plan() []part {
	type group struct {
		values deltalog.PartitionValues
		newest int64
		small  []*deltalog.Add
	}
	groups := map[string]*group{}
	for a := range c.state.Files() {
		key := partitionKey(a.PartitionValues)
		g := groups[key]
		if g == nil {
			g = &group{values: a.PartitionValues}
			groups[key] = g
		}
		g.newest = max(g.newest, a.ModificationTime)
		// Clustered files are left to the engine that clusters them: a
		// plain rewrite would undo their layout.
		if a.Size < c.opts.target/2 && len(a.DeletionVector) == 0 && a.BaseRowID == nil && a.ClusteringProvider == "" {
			g.small = append(g.small, a)
		}
	}
	ripeBefore := c.stats.now().Add(-c.opts.idle).UnixMilli()
	var out []part
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		if g.newest > ripeBefore || len(g.small) < c.opts.minFiles {
			continue
		}
		if bins := binPack(g.small, c.opts.target); len(bins) > 0 {
			out = append(out, part{values: g.values, bins: bins})
		}
	}
	return out
}

// binPack packs files, oldest first, into bins of at most target bytes
// (a file larger than what is left starts a new bin); bins of one file are
// dropped.
func binPack(files []*deltalog.Add, target int64) [][]*deltalog.Add {
	slices.SortFunc(files, func(a, b *deltalog.Add) int {
		return cmp.Or(cmp.Compare(a.ModificationTime, b.ModificationTime), strings.Compare(a.Path, b.Path))
	})
	var bins [][]*deltalog.Add
	var cur []*deltalog.Add
	var size int64
	for _, f := range files {
		if len(cur) > 0 && size+f.Size > target {
			bins, cur, size = append(bins, cur), nil, 0
		}
		cur = append(cur, f)
		size += f.Size
	}
	bins = append(bins, cur)
	return slices.DeleteFunc(bins, func(b []*deltalog.Add) bool { return len(b) < 2 })
}

// partitionKey is a map key for a partition value tuple.
func partitionKey(pv deltalog.PartitionValues) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(pv)) {
		b.WriteString(k)
		if v := pv[k]; v == nil {
			b.WriteString("\x01")
		} else {
			b.WriteString("\x00" + *v)
		}
		b.WriteString("\x02")
	}
	return b.String()
}

// compact rewrites one partition value's bins and commits them as one
// commit. Unless that commit may have landed, the files it wrote are
// deleted on the way out.
func (c *compactor) compact(ctx context.Context, p part) (committed bool, err error) {
	select {
	case c.stats.sem <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-c.stats.sem }()
	start := time.Now()
	defer threadCPU(&c.stats.cpuMicros)()
	defer func() { c.stats.wallMicros.Add(time.Since(start).Microseconds()) }()

	var written []string
	keep := false
	defer func() {
		if !keep {
			c.discard(ctx, written)
		}
	}()
	var removed []*deltalog.Add
	var added []deltalog.DataFile
	var bytesRead int64
	for _, bin := range p.bins {
		r, a, n, err := c.rewrite(ctx, p.values, bin, &written)
		if err != nil {
			return false, err
		}
		removed, added, bytesRead = append(removed, r...), append(added, a...), bytesRead+n
	}
	if len(added) == 0 {
		return false, nil
	}
	st := c.state
	if st.Version != c.snap.Version {
		return false, fmt.Errorf("internal error: compaction planned at version %d, snapshot at %d", st.Version, c.snap.Version)
	}
	if c.stats.beforeCommit != nil {
		if err := c.stats.beforeCommit(ctx); err != nil {
			return false, err
		}
	}
	res, err := deltalog.CommitCompaction(ctx, c.store, c.snap, deltalog.Compaction{
		Removed: removed, Added: added, EngineInfo: c.stats.createdBy}, &deltalog.CommitOptions{
		LostRace: func(int64) { c.stats.lostRaces.Add(1) }})
	var unknown *deltalog.CompactionUnknownError
	if errors.As(err, &unknown) {
		keep = true // it may have landed: its files may be referenced
	}
	if err != nil {
		return false, err
	}
	keep = true
	// Follow the commit, or drop the view: the next plan must come from a
	// state at the snapshot's version.
	c.snap, c.state = nil, nil
	if res.Snapshot != nil {
		if _, err := st.Update(ctx, c.store, res.Version); err == nil && st.Version == res.Snapshot.Version {
			c.snap, c.state = res.Snapshot, st
		}
		if c.committed != nil {
			c.committed(res.Snapshot, res.Actions)
		}
	}
	var bytesWritten int64
	for _, f := range added {
		bytesWritten += f.Size
	}
	c.stats.commits.Add(1)
	c.stats.filesRemoved.Add(int64(len(removed)))
	c.stats.filesAdded.Add(int64(len(added)))
	c.stats.bytesRead.Add(bytesRead)
	c.stats.bytesWritten.Add(bytesWritten)
	c.log.Info("compacted Delta files", "table", c.uri, "version", res.Version, "partition", partitionLabel(p.values),
		"files_removed", len(removed), "files_added", len(added), "bytes_read", bytesRead, "bytes_written", bytesWritten,
		"duration_ms", time.Since(start).Milliseconds())
	return true, nil
}

// rewrite reads one bin's files and writes them as one file per Parquet
// schema among them; a file alone with its schema is left out. It returns
// the files read that were rewritten, the files written and the bytes read.
func (c *compactor) rewrite(ctx context.Context, pv deltalog.PartitionValues, bin []*deltalog.Add, written *[]string) (
	removed []*deltalog.Add, added []deltalog.DataFile, bytesRead int64, err error) {
	type schemaGroup struct {
		schema  string // encode.SchemaKey
		adds    []*deltalog.Add
		data    [][]byte
		footers []*format.FileMetaData
		rows    int64
	}
	var groups []*schemaGroup
	for _, a := range bin {
		p, err := deltalog.FilePath(a.Path)
		if err != nil {
			continue // not a file of this table's directory: leave it
		}
		data, err := c.store.Get(ctx, p)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("reading %s: %w", p, err)
		}
		bytesRead += int64(len(data))
		md, err := ckptfile.DecodeFooter(data)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("reading %s: %w", p, err)
		}
		key := encode.SchemaKey(md)
		i := slices.IndexFunc(groups, func(g *schemaGroup) bool { return g.schema == key })
		if i < 0 {
			groups, i = append(groups, &schemaGroup{schema: key}), len(groups)
		}
		g := groups[i]
		g.adds, g.data, g.footers, g.rows = append(g.adds, a), append(g.data, data), append(g.footers, md), g.rows+md.NumRows
	}
	dir, err := deltalog.PartitionDir(c.snap.PartitionColumns, pv)
	if err != nil {
		return nil, nil, 0, err
	}
	for _, g := range groups {
		if len(g.data) < 2 {
			continue
		}
		m, out, err := c.combine(g.adds, g.data, g.footers)
		if err != nil {
			return nil, nil, 0, err
		}
		if m.NumRecords != g.rows {
			return nil, nil, 0, fmt.Errorf("internal error: combined %d rows of %d", m.NumRecords, g.rows)
		}
		path := dir + encode.DataFileName(0)
		*written = append(*written, path)
		if err := c.store.Put(ctx, path, out); err != nil {
			return nil, nil, 0, fmt.Errorf("writing %s: %w", path, err)
		}
		removed = append(removed, g.adds...)
		added = append(added, deltalog.DataFile{Path: path, PartitionValues: pv, Size: m.Size, Stats: m.Stats})
	}
	return removed, added, bytesRead, nil
}

// combine makes one file of files (their adds and bytes): combineFiles,
// counted.
func (c *compactor) combine(adds []*deltalog.Add, data [][]byte, footers []*format.FileMetaData) (encode.Merged, []byte, error) {
	stats := make([]string, len(adds))
	for i, a := range adds {
		stats[i] = a.Stats
	}
	m, out, merged, err := combineFiles(c.snap, stats, data, footers, c.stats.createdBy)
	if merged {
		c.stats.merged.Add(1)
	}
	return m, out, err
}

// combineFiles makes one file of files of one Parquet schema (their
// add.stats, bytes and footers): spliced, their pages copied as they are
// and their stats combined, when they qualify (the sink's own files do);
// else merged, every value decoded and encoded again and the stats
// collected anew. Compaction and upserts (upsert.go) combine files so.
func combineFiles(snap *deltalog.Snapshot, stats []string, data [][]byte, footers []*format.FileMetaData, createdBy string) (
	m encode.Merged, out []byte, merged bool, err error) {
	coll, err := deltalog.NewStatsCollector(snap)
	if err != nil {
		return encode.Merged{}, nil, false, err
	}
	out, rows, err := encode.Splice(nil, data, footers)
	if err == nil {
		for _, st := range stats {
			if err = coll.ObserveStats(st); err != nil {
				break
			}
		}
	}
	if err == nil {
		js, err := coll.JSON()
		return encode.Merged{NumRecords: rows, Size: int64(len(out)), Stats: js}, out, false, err
	}
	if !errors.Is(err, encode.ErrNotSpliceable) && !errors.Is(err, deltalog.ErrStatsIncomplete) {
		return encode.Merged{}, nil, false, err
	}
	files := make([]*parquet.File, len(data))
	for i, d := range data {
		if files[i], err = parquet.OpenFile(bytes.NewReader(d), int64(len(d))); err != nil {
			return encode.Merged{}, nil, true, err
		}
	}
	var buf bytes.Buffer
	m, err = encode.Merge(&buf, files, coll, createdBy)
	return m, buf.Bytes(), true, err
}

// discardTimeout bounds the deletion of a failed compaction's files.
const discardTimeout = 30 * time.Second

// discard deletes files no commit references, bounded even when ctx is
// done (the instance closing); a file left behind is an orphan only.
func (c *compactor) discard(ctx context.Context, paths []string) {
	if len(paths) == 0 {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
	defer cancel()
	for _, p := range paths {
		if err := c.store.Delete(dctx, p); err != nil && !errors.Is(err, deltalog.ErrNotFound) {
			c.log.Warn("could not delete a compaction's uncommitted file; it is an orphan no commit references",
				"table", c.uri, "path", p, "error", err)
		}
	}
}

// partitionLabel renders partition values for the log: "day=2026-01-02".
func partitionLabel(pv deltalog.PartitionValues) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(pv)) {
		v := "null"
		if pv[k] != nil {
			v = *pv[k]
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, "/")
}
