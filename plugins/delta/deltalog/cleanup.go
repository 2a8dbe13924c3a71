package deltalog

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Log cleanup (PROTOCOL.md "Metadata Cleanup", delta-rs
// cleanup_expired_logs_for). After a checkpoint at version c:
//
//   - Nothing happens when delta.enableExpiredLogCleanup is "false".
//   - A file has expired when its modification time is at or before
//     now - delta.logRetentionDuration (default 30 days). Unlike Spark the
//     cutoff is not rounded down to midnight, so short retentions (tests,
//     "interval 1 hour") behave as written.
//   - keep = min(c, the oldest commit that has not expired): every version
//     from keep on stays readable. The boundary is the newest complete
//     checkpoint at or below keep; with none, nothing is deleted.
//   - Deleted: commit files below the boundary (all expired, by the choice
//     of keep, so the remaining commits stay contiguous), and expired
//     checkpoint files (every part), .crc files and log compaction files
//     (x.y.compacted.json whose whole range is below the boundary) below
//     the boundary. An unexpired one is left (an orphan no reader of the
//     boundary needs). Never the boundary checkpoint, the
//     commit at its version (it holds the commitInfo), anything newer,
//     _last_checkpoint, or anything in another sub-directory (_commits,
//     _staged_commits).
//   - Sidecars (tables with the v2Checkpoint feature), without reading a
//     checkpoint: a sidecar is referenced only by checkpoints written
//     within SidecarReuseWindow of its creation (the rule this package's
//     writer keeps; delta-spark never references a sidecar again). A
//     sidecar created more than that window (plus sidecarSlack for clocks)
//     before the boundary's commit was written is referenced by no
//     checkpoint at or above the boundary; once that window has also
//     expired, every checkpoint that referenced it is expired and below the
//     boundary, so deleted. Such sidecars are deleted after the log files.
//   - Commits go first, oldest first, then checksum and compaction files,
//     then checkpoints: an interrupted cleanup leaves a contiguous log that
//     still starts at a checkpoint, and (checkpointProtection's rule d)
//     never a checkpoint removed before the commits it covers.
//   - checkpointProtection (writer feature) with
//     delta.requireCheckpointProtectionBeforeVersion = P > 0: versions
//     below P may only be truncated all at once. If the boundary is below
//     P nothing is deleted (and the reason returned); if it is at or above
//     P, everything below the boundary goes as above.

// sidecarSlack allows for the clocks of the writers that stamped a
// sidecar's reuse and of the store that stamped its modification time.
const sidecarSlack = time.Hour

// DefaultLogRetention is delta.logRetentionDuration's default.
const DefaultLogRetention = 30 * 24 * time.Hour

// CleanupOptions tunes CleanupLog. Protocol and Metadata are the table's
// (at the checkpoint version or later).
type CleanupOptions struct {
	Protocol Protocol
	Metadata Metadata
	// Now is the clock files are expired against. Default time.Now.
	Now func() time.Time
	// Logger receives one debug line per deleted file. Default: discard.
	Logger *slog.Logger
}

// CleanupResult says what CleanupLog did.
type CleanupResult struct {
	// Boundary is the checkpoint version everything older was deleted
	// behind (-1 when nothing could be).
	Boundary int64
	// Deleted lists the deleted paths, in deletion order.
	Deleted []string
	// Skipped explains why nothing was deleted, when a rule (not a lack of
	// expired files) stopped the cleanup.
	Skipped string
	// NextCheck, when set, is the earliest time any remaining log file can
	// expire: until then (and while the retention stays the same) another
	// cleanup would delete nothing, so a caller may skip it — and the
	// listing of the whole log it costs.
	NextCheck time.Time
}

// CleanupLog deletes expired log files older than what a reader of the
// checkpoint at version checkpoint needs (see the rules above). The
// checkpoint must exist. A failed delete stops the cleanup and is returned
// with what was deleted so far.
func CleanupLog(ctx context.Context, store Store, checkpoint int64, opts CleanupOptions) (*CleanupResult, error) {
	res := &CleanupResult{Boundary: -1}
	log := orDiscard(opts.Logger)
	conf := opts.Metadata.Configuration
	retention, skip := logRetention(conf)
	if skip != "" {
		res.Skipped = skip
		return res, nil
	}
	cutoff := orNow(opts.Now).Add(-retention)
	files, err := store.List(ctx, LogDir, "")
	if err != nil {
		return res, err
	}
	l := scanLogFiles(files, checkpoint, cutoff)
	if !l.complete[checkpoint] {
		res.Skipped = fmt.Sprintf("no complete checkpoint at version %d", checkpoint)
		return res, nil
	}
	boundary := int64(-1)
	for v := range l.complete {
		if v <= l.keep && v > boundary {
			boundary = v
		}
	}
	if boundary <= 0 {
		res.NextCheck = l.nextCheck(nil, retention) // nothing below it
		return res, nil
	}
	if p := protectedBefore(opts.Protocol, conf); p > 0 && boundary < p {
		res.Skipped = fmt.Sprintf("checkpointProtection: history before version %d must be truncated in one go, and the oldest checkpoint that can be kept is %d", p, boundary)
		return res, nil
	}
	res.Boundary = boundary
	deleted := map[string]bool{}
	for _, f := range l.victims(boundary, cutoff) {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := store.Delete(ctx, f.Path); err != nil {
			return res, fmt.Errorf("deltalog: log cleanup: delete %s: %w", f.Path, err)
		}
		log.Debug("deltalog: deleted expired log file", "path", f.Path, "boundary", boundary)
		res.Deleted = append(res.Deleted, f.Path)
		deleted[f.Path] = true
	}
	res.NextCheck = l.nextCheck(deleted, retention)
	if slices.Contains(SupportedFeatures(opts.Protocol), "v2Checkpoint") {
		for _, f := range l.all {
			if f.kind == "commit" && f.version == boundary {
				return res, cleanupSidecars(ctx, store, f.ModTime, cutoff, log, res)
			}
		}
	}
	return res, nil
}

// logRetention is the table's log retention
// (delta.logRetentionDuration), or why the log must not be cleaned up.
func logRetention(conf map[string]string) (time.Duration, string) {
	if strings.EqualFold(strings.TrimSpace(conf["delta.enableExpiredLogCleanup"]), "false") {
		return 0, "delta.enableExpiredLogCleanup is false"
	}
	raw, ok := conf["delta.logRetentionDuration"]
	if !ok {
		return DefaultLogRetention, ""
	}
	d, err := ParseInterval(raw)
	if err != nil {
		return 0, fmt.Sprintf("delta.logRetentionDuration %q does not parse: %v", raw, err)
	}
	return d, ""
}

// cleanupFile is a file of _delta_log that cleanup may delete.
type cleanupFile struct {
	FileInfo
	version int64
	kind    string // commit, checkpoint, crc, compaction:<end version>
}

// expired reports whether the file is older than the retention cutoff.
func (f *cleanupFile) expired(cutoff time.Time) bool { return !f.ModTime.After(cutoff) }

// logFiles is what cleanup knows of _delta_log.
type logFiles struct {
	all []cleanupFile
	// keep is the oldest version to keep: the checkpoint's, or an older
	// unexpired commit's.
	keep int64
	// complete are the versions of complete checkpoints (multi-part:
	// every part present).
	complete map[int64]bool
}

// scanLogFiles sorts the listing of _delta_log for a cleanup behind the
// checkpoint at version checkpoint.
func scanLogFiles(files []FileInfo, checkpoint int64, cutoff time.Time) *logFiles {
	l := &logFiles{keep: checkpoint, complete: map[int64]bool{}}
	cps := checkpointSets{}
	for _, fi := range files {
		if lf, ok := parseLogFile(fi); ok {
			if lf.kind == fileCommit {
				l.all = append(l.all, cleanupFile{fi, lf.version, "commit"})
				if !l.all[len(l.all)-1].expired(cutoff) && lf.version < l.keep {
					l.keep = lf.version
				}
			} else {
				l.all = append(l.all, cleanupFile{fi, lf.version, "checkpoint"})
				cps.add(lf)
			}
			continue
		}
		name, ok := strings.CutPrefix(fi.Path, LogDir)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		if v, ok := crcVersion(name); ok {
			l.all = append(l.all, cleanupFile{fi, v, "crc"})
		} else if start, end, ok := compactionRange(name); ok {
			l.all = append(l.all, cleanupFile{fi, start, "compaction:" + strconv.FormatInt(end, 10)})
		}
	}
	for v, cs := range cps {
		if cs.complete() {
			l.complete[v] = true
		}
	}
	return l
}

// nextCheck is when the oldest file that remains (not deleted) expires.
func (l *logFiles) nextCheck(deleted map[string]bool, retention time.Duration) time.Time {
	var oldest time.Time
	for _, f := range l.all {
		if !deleted[f.Path] && (oldest.IsZero() || f.ModTime.Before(oldest)) {
			oldest = f.ModTime
		}
	}
	if oldest.IsZero() {
		return time.Time{}
	}
	return oldest.Add(retention)
}

// victims are the expired files below boundary, in the order to delete
// them (see the rules above): commits, oldest first, then checksum and
// compaction files, then checkpoints.
func (l *logFiles) victims(boundary int64, cutoff time.Time) []cleanupFile {
	var victims []cleanupFile
	for _, f := range l.all {
		if f.version >= boundary {
			continue
		}
		switch {
		case f.kind == "commit":
			// keep <= every unexpired commit, so this one has expired.
		case strings.HasPrefix(f.kind, "compaction:"):
			end, _ := strconv.ParseInt(strings.TrimPrefix(f.kind, "compaction:"), 10, 64)
			if end >= boundary || !f.expired(cutoff) {
				continue
			}
		default:
			if !f.expired(cutoff) {
				continue
			}
		}
		victims = append(victims, f)
	}
	rank := func(kind string) int {
		switch {
		case kind == "commit":
			return 0
		case kind == "crc" || strings.HasPrefix(kind, "compaction"):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(victims, func(a, b cleanupFile) int {
		if r := rank(a.kind) - rank(b.kind); r != 0 {
			return r
		}
		if a.version != b.version {
			if a.version < b.version {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Path, b.Path)
	})
	return victims
}

// cleanupSidecars deletes the sidecars created more than
// SidecarReuseWindow+sidecarSlack before boundaryTime (the boundary
// commit's modification time) and before cutoff (now less the retention).
func cleanupSidecars(ctx context.Context, store Store, boundaryTime, cutoff time.Time, log *slog.Logger, res *CleanupResult) error {
	files, err := store.List(ctx, SidecarDir, "")
	if err != nil {
		return fmt.Errorf("deltalog: log cleanup: list sidecars: %w", err)
	}
	for _, f := range files {
		name, ok := strings.CutPrefix(f.Path, SidecarDir)
		if !ok || strings.Contains(name, "/") || !strings.HasSuffix(name, ".parquet") {
			continue
		}
		last := f.ModTime.Add(SidecarReuseWindow + sidecarSlack)
		if !last.Before(boundaryTime) || last.After(cutoff) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := store.Delete(ctx, f.Path); err != nil {
			return fmt.Errorf("deltalog: log cleanup: delete %s: %w", f.Path, err)
		}
		log.Debug("deltalog: deleted unreferenced sidecar", "path", f.Path)
		res.Deleted = append(res.Deleted, f.Path)
	}
	return nil
}

// protectedBefore is delta.requireCheckpointProtectionBeforeVersion when
// the table supports checkpointProtection, else 0.
func protectedBefore(p Protocol, conf map[string]string) int64 {
	if !slices.Contains(SupportedFeatures(p), "checkpointProtection") {
		return 0
	}
	raw, ok := conf["delta.requireCheckpointProtectionBeforeVersion"]
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil {
		// Unreadable: protect everything.
		return 1<<63 - 1
	}
	return v
}

// crcVersion parses NNNNNNNNNNNNNNNNNNNN.crc.
func crcVersion(name string) (int64, bool) {
	if len(name) != 24 || !strings.HasSuffix(name, ".crc") {
		return 0, false
	}
	return parseDigits(name[:20])
}

// compactionRange parses <x>.<y>.compacted.json.
func compactionRange(name string) (int64, int64, bool) {
	rest, ok := strings.CutSuffix(name, ".compacted.json")
	if !ok || len(rest) != 41 || rest[20] != '.' {
		return 0, 0, false
	}
	x, ok1 := parseDigits(rest[:20])
	y, ok2 := parseDigits(rest[21:])
	return x, y, ok1 && ok2
}
