package delta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

// Checkpoints and log cleanup, off the commit path.
//
// After the sink commits version v it hands the checkpointer the actions
// it wrote there (committed: no I/O, no lock held but its own). When v is
// a multiple of the table's delta.checkpointInterval (default 10, as
// Spark), a background goroutine, started on the first due checkpoint with
// the SDK's Host.Go so closing the instance stops it, then:
//
//  1. brings its in-memory deltalog.State to v — loaded with LoadStateAt
//     the first time (the checkpoint and commits up to v, file list
//     included), afterwards advanced commit by commit: the commits this
//     process wrote from the actions the sink handed over (no request),
//     only the others' (versions it did not write) read from the store;
//  2. writes the classic checkpoint at v (put-if-absent: another instance
//     that checkpointed v first wins, which is fine) and _last_checkpoint
//     (never backwards), through a deltalog.CheckpointCache: the adds of
//     the previous checkpoint are copied as encoded Parquet pages and only
//     the adds since are encoded, so a checkpoint costs what changed plus
//     a copy of the file's bytes, not a re-encode of every live file
//     (checkpoint_cache.go in deltalog; its memory is bounded, past the
//     bound a checkpoint encodes everything and counts a fallback);
//  3. cleans up the log behind it (deltalog.CleanupLog rules).
//
// Due versions coalesce: while one checkpoint is written, a later due
// version replaces an earlier one. A failure is logged and counted; the
// next due version tries again, from the state as far as it got. A batch
// never waits for any of this and never fails because of it.
//
// On open, a table whose newest checkpoint is older than the last multiple
// of the interval at or below its version missed a checkpoint (the process
// died first, or another writer does not checkpoint): one is scheduled at
// the current version.

// DefaultCheckpointInterval is delta.checkpointInterval's default.
const DefaultCheckpointInterval = 10

// checkpointInterval reads delta.checkpointInterval; anything but a
// positive integer means the default.
func checkpointInterval(md *deltalog.Metadata) int64 {
	if raw, ok := md.Configuration["delta.checkpointInterval"]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return DefaultCheckpointInterval
}

// checkpointStats are the sink-wide checkpoint counters.
type checkpointStats struct {
	written, failures, deleted atomic.Int64
	lastVersion, lastWriteMs   atomic.Int64
	// CPU time of the checkpointer's thread while checkpointing, µs.
	cpuMicros atomic.Int64
	// Adds encoded and copied as bytes; checkpoints that emptied the cache.
	addsEncoded, addsCopied, cacheFallbacks atomic.Int64
	// Commits folded into the state from memory and read from the store.
	commitsFromMemory, commitsRead atomic.Int64
}

func newCheckpointStats() *checkpointStats {
	s := &checkpointStats{}
	s.lastVersion.Store(-1)
	return s
}

// addTo adds the counters to the sink's metrics.
func (s *checkpointStats) addTo(m map[string]any) {
	m["checkpoints_written"] = s.written.Load()
	m["checkpoint_failures"] = s.failures.Load()
	m["last_checkpoint_version"] = s.lastVersion.Load()
	m["last_checkpoint_write_ms"] = s.lastWriteMs.Load()
	m["log_files_deleted"] = s.deleted.Load()
	m["checkpoint_cpu_ms"] = s.cpuMicros.Load() / 1000
	m["checkpoint_adds_encoded"] = s.addsEncoded.Load()
	m["checkpoint_adds_copied"] = s.addsCopied.Load()
	m["checkpoint_cache_fallbacks"] = s.cacheFallbacks.Load()
	m["checkpoint_commits_from_memory"] = s.commitsFromMemory.Load()
	m["checkpoint_commits_read"] = s.commitsRead.Load()
}

// checkpointer checkpoints one table.
type checkpointer struct {
	uri   string
	store objstore.Store
	log   *slog.Logger
	stats *checkpointStats
	// spawn starts the background goroutine (Host.Go in the sink).
	spawn     func(func(context.Context))
	createdBy string
	now       func() time.Time

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	wake   chan struct{}

	mu      sync.Mutex
	due     int64 // newest version a checkpoint is due at; -1: none
	started bool
	// The actions this process committed, by version, until the state
	// takes them (at most maxPending; the oldest go first and are read
	// from the store instead).
	pending map[int64][]deltalog.Action

	// Owned by the goroutine.
	state    *deltalog.State
	cache    deltalog.CheckpointCache
	lastSkip string
	// Until cleanupAfter no log file can have expired (CleanupResult
	// NextCheck), as long as the settings in cleanupConf hold.
	cleanupAfter time.Time
	cleanupConf  string
}

func newCheckpointer(uri string, store objstore.Store, log *slog.Logger, stats *checkpointStats, spawn func(func(context.Context))) *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	return &checkpointer{uri: uri, store: store, log: log, stats: stats, spawn: spawn, createdBy: engineInfo(),
		now: time.Now, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), due: -1,
		pending: map[int64][]deltalog.Action{}}
}

// maxPending bounds the commits kept for the state (a few intervals' worth
// at the default interval; more only while checkpoints fail or lag).
const maxPending = 256

// opened schedules a checkpoint the table missed (see the file comment).
func (c *checkpointer) opened(snap *deltalog.Snapshot) {
	v, interval := snap.Version, checkpointInterval(&snap.Metadata)
	if last := v - v%interval; last > 0 && snap.CheckpointVersion < last {
		c.log.Info("the Delta table missed a checkpoint; scheduling one", "table", c.uri, "version", v,
			"newest_checkpoint", snap.CheckpointVersion, "interval", interval)
		c.schedule(v)
	}
}

// committed is called after the sink committed snap.Version, with the
// actions it wrote there (nil when it does not have them: the commit is
// then read from the store). actions are kept, not copied: the caller
// must not change them.
func (c *checkpointer) committed(snap *deltalog.Snapshot, actions []deltalog.Action) {
	if actions != nil {
		c.mu.Lock()
		if c.ctx.Err() == nil {
			c.pending[snap.Version] = actions
			if len(c.pending) > maxPending {
				delete(c.pending, slices.Min(slices.Collect(maps.Keys(c.pending))))
			}
		}
		c.mu.Unlock()
	}
	if v := snap.Version; v > 0 && v%checkpointInterval(&snap.Metadata) == 0 {
		c.schedule(v)
	}
}

// take returns the actions committed at v by this process, if kept, and
// forgets every version up to v.
func (c *checkpointer) take(v int64) ([]deltalog.Action, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.pending[v]
	for k := range c.pending {
		if k <= v {
			delete(c.pending, k)
		}
	}
	return a, ok
}

// kept reports whether the actions committed at v are kept.
func (c *checkpointer) kept(v int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[v]
	return ok
}

// advance brings st to v: the commits this process wrote from memory, runs
// of other commits read from the store.
func (c *checkpointer) advance(ctx context.Context, st *deltalog.State, v int64) error {
	for st.Version < v {
		next := st.Version + 1
		if actions, ok := c.take(next); ok {
			if err := st.Apply(next, actions); err != nil {
				return err
			}
			c.stats.commitsFromMemory.Add(1)
			continue
		}
		to := next
		for to < v && !c.kept(to+1) {
			to++
		}
		n, err := st.Update(ctx, c.store, to)
		c.stats.commitsRead.Add(int64(n))
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *checkpointer) schedule(v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	c.due = max(c.due, v)
	if !c.started {
		c.started = true
		c.spawn(c.run)
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// stop ends the goroutine, aborting a checkpoint in progress.
func (c *checkpointer) stop() { c.cancel() }

func (c *checkpointer) run(hostCtx context.Context) {
	wake := func() <-chan struct{} { return c.wake }
	background(c.ctx, hostCtx, wake, func(ctx context.Context) bool {
		c.mu.Lock()
		v := c.due
		c.due = -1
		c.mu.Unlock()
		if v < 0 {
			return true
		}
		start := time.Now()
		if err := c.safeCheckpoint(ctx, v); err != nil {
			if ctx.Err() != nil {
				return false
			}
			c.stats.failures.Add(1)
			c.log.Warn("Delta checkpoint failed; it is retried at the next checkpoint interval", "table", c.uri,
				"version", v, "error", err, "duration_ms", time.Since(start).Milliseconds())
		}
		return true
	})
}

// safeCheckpoint is checkpoint with a panic turned into a failure: a bug
// here must not take the sink down (Host.Go would poison the instance).
// The state may be half-updated, so it is dropped and loaded afresh next
// time.
func (c *checkpointer) safeCheckpoint(ctx context.Context, v int64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			c.state, c.cache = nil, deltalog.CheckpointCache{}
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	defer threadCPU(&c.stats.cpuMicros)()
	return c.checkpoint(ctx, v)
}

// checkpoint writes the checkpoint at v (or at a later version when the
// log no longer holds v) and cleans up behind it.
func (c *checkpointer) checkpoint(ctx context.Context, v int64) error {
	if c.state != nil && c.state.Version > v {
		return nil // a later checkpoint was written already
	}
	st, err := c.stateAt(ctx, v)
	if err != nil {
		return err
	}

	writeStart := time.Now()
	res, err := deltalog.WriteCheckpoint(ctx, c.store, st, &deltalog.CheckpointOptions{
		Now: c.now, Logger: c.log, CreatedBy: c.createdBy, Cache: &c.cache})
	if res != nil {
		c.stats.addsEncoded.Add(res.Cache.AddsEncoded)
		c.stats.addsCopied.Add(res.Cache.AddsCopied)
		if res.Cache.Dropped {
			c.stats.cacheFallbacks.Add(1)
			c.log.Warn("Delta checkpoint cache over its memory bound: dropped, the next checkpoint encodes every file again",
				"table", c.uri, "files", res.Adds, "max_bytes", c.cache.MaxBytes)
		}
	}
	if err != nil {
		if res == nil || ctx.Err() != nil {
			return err
		}
		// The checkpoint is there; only the hint is stale, and readers list
		// the log past it anyway. The next checkpoint writes it again.
		c.log.Warn("Delta checkpoint written, _last_checkpoint not updated", "table", c.uri, "version", res.Version, "error", err)
	}
	st.ExpireTombstones(c.now())
	ms := time.Since(writeStart).Milliseconds()
	c.stats.lastWriteMs.Store(ms)
	for {
		old := c.stats.lastVersion.Load()
		if old >= res.Version || c.stats.lastVersion.CompareAndSwap(old, res.Version) {
			break
		}
	}
	c.stats.written.Add(1) // last: whoever sees the count sees the version
	// Debug: at the default interval this is every tenth commit; the
	// checkpoint metrics carry the same news.
	c.log.Debug("wrote Delta checkpoint", "table", c.uri, "version", res.Version, "actions", res.Actions,
		"files", res.Adds, "adds_encoded", res.Cache.AddsEncoded, "adds_copied", res.Cache.AddsCopied,
		"bytes", res.SizeInBytes, "already_existed", res.Existed,
		"last_checkpoint_updated", res.LastCheckpointWritten, "duration_ms", ms)

	return c.cleanup(ctx, st, res.Version)
}

// stateAt returns the table state a checkpoint at v is written from: the
// one kept since the last checkpoint, advanced to v, or loaded afresh.
func (c *checkpointer) stateAt(ctx context.Context, v int64) (*deltalog.State, error) {
	loadStart := time.Now()
	loaded := false
	if c.state != nil && c.state.Version < v {
		if err := c.advance(ctx, c.state, v); err != nil {
			var gap *deltalog.LogGapError
			if !errors.As(err, &gap) {
				return nil, err
			}
			c.state = nil // the log moved on behind a newer checkpoint
		}
	}
	if c.state == nil {
		opts := &deltalog.LoadOptions{Logger: c.log, Now: c.now}
		st, err := deltalog.LoadStateAt(ctx, c.store, v, opts)
		if err != nil && ctx.Err() == nil && !deltalog.IsTransient(err) {
			// Version v may be gone behind a newer checkpoint: use the latest.
			st, err = deltalog.LoadState(ctx, c.store, opts)
		}
		if err != nil {
			return nil, err
		}
		c.state, loaded = st, true
		c.take(st.Version) // the state holds these already
	}
	st := c.state
	if loaded {
		c.log.Info("loaded the Delta table's file list for checkpoints", "table", c.uri, "version", st.Version,
			"from_checkpoint", st.CheckpointVersion, "files", st.NumFiles(), "duration_ms", time.Since(loadStart).Milliseconds())
	}
	return st, nil
}

// cleanup deletes the log files that expired behind the checkpoint at
// version, unless nothing can have expired since the last look. A failure
// is logged, not returned (unless the checkpointer is stopping): the next
// checkpoint tries again.
func (c *checkpointer) cleanup(ctx context.Context, st *deltalog.State, version int64) error {
	conf := st.Metadata.Configuration
	cleanupConf := conf["delta.logRetentionDuration"] + "\x00" + conf["delta.enableExpiredLogCleanup"] + "\x00" +
		conf["delta.requireCheckpointProtectionBeforeVersion"]
	if cleanupConf == c.cleanupConf && c.now().Before(c.cleanupAfter) {
		return nil // nothing can have expired yet: skip listing the log
	}
	cl, err := deltalog.CleanupLog(ctx, c.store, version, deltalog.CleanupOptions{
		Protocol: st.Protocol, Metadata: st.Metadata, Now: c.now, Logger: c.log})
	if cl != nil {
		c.stats.deleted.Add(int64(len(cl.Deleted)))
		c.cleanupAfter, c.cleanupConf = cl.NextCheck, cleanupConf
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		c.log.Warn("Delta log cleanup failed; it is retried after the next checkpoint", "table", c.uri, "error", err)
		return nil
	}
	if cl.Skipped != c.lastSkip {
		if cl.Skipped != "" {
			c.log.Info("Delta log cleanup skipped", "table", c.uri, "reason", cl.Skipped)
		}
		c.lastSkip = cl.Skipped
	}
	if len(cl.Deleted) > 0 {
		c.log.Info("cleaned up the Delta log", "table", c.uri, "deleted", len(cl.Deleted), "kept_from_checkpoint", cl.Boundary)
	}
	return nil
}
