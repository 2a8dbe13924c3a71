package deltalog_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

var day0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// cleanupTable writes commits 0..latest, commit v (and its .crc) at day0 +
// v days, and real checkpoints at cps, each one minute after its commit.
// modTime overrides the time of single commits.
func cleanupTable(t *testing.T, protocol, conf string, latest int64, cps []int64, modTime map[int64]time.Time) *deltalog.MemStore {
	t.Helper()
	s := deltalog.NewMemStore()
	var now time.Time
	s.Now = func() time.Time { return now }
	for v := int64(0); v <= latest; v++ {
		now = day0.Add(time.Duration(v) * 24 * time.Hour)
		if mt, ok := modTime[v]; ok {
			now = mt
		}
		if v == 0 {
			putCommit(s, 0, protocol, metaDataLine(conf))
		} else {
			putCommit(s, v, addLine(fmt.Sprintf("p=a/%d.parquet", v), "a", v, ""))
		}
		s.Put(fmt.Sprintf("_delta_log/%020d.crc", v), []byte("{}"))
		if slices.Contains(cps, v) {
			now = now.Add(time.Minute)
			st, err := deltalog.LoadStateAt(ctx, s, v, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := deltalog.WriteCheckpoint(ctx, s, st, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

func logNames(t *testing.T, s deltalog.Store) []string {
	t.Helper()
	files, err := s.List(ctx, deltalog.LogDir, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimPrefix(f.Path, deltalog.LogDir))
	}
	return out
}

// shortNames turns "_delta_log/00000000000000000007.json" into "7.json".
func shortNames(paths []string) []string {
	var out []string
	for _, p := range paths {
		p = strings.TrimPrefix(p, deltalog.LogDir)
		trimmed := strings.TrimLeft(p, "0")
		if strings.HasPrefix(trimmed, ".") || trimmed == "" {
			trimmed = "0" + trimmed
		}
		out = append(out, trimmed)
	}
	return out
}

func span64(from, to int64, suffix string) []string {
	var out []string
	for v := from; v <= to; v++ {
		out = append(out, fmt.Sprintf("%d%s", v, suffix))
	}
	return out
}

func cleanup(t *testing.T, s deltalog.Store, cp int64, now time.Time) *deltalog.CleanupResult {
	t.Helper()
	st, err := deltalog.LoadState(ctx, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := deltalog.CleanupLog(ctx, s, cp, deltalog.CleanupOptions{Protocol: st.Protocol, Metadata: st.Metadata, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCleanupKeepsRetainedVersionsReadable(t *testing.T) {
	s := cleanupTable(t, protocolLine, "", 25, []int64{10, 20}, nil)
	// 30-day retention at day 45.5: commits 0..15 expired, 16.. kept, so
	// the boundary is checkpoint 10 (the newest at or below 16).
	res := cleanup(t, s, 20, day0.Add(45*24*time.Hour+12*time.Hour))
	want := append(span64(0, 9, ".json"), span64(0, 9, ".crc")...)
	if res.Boundary != 10 || !slices.Equal(shortNames(res.Deleted), want) {
		t.Fatalf("boundary %d deleted %v\nwant %v", res.Boundary, shortNames(res.Deleted), want)
	}
	// The oldest file left is commit 10's .crc / commit 10, from day 10:
	// nothing can expire before day 40.
	if want := day0.Add(40 * 24 * time.Hour); !res.NextCheck.Equal(want) {
		t.Fatalf("next check %v, want %v", res.NextCheck, want)
	}
	// Every retained version still loads; the deleted ones do not.
	for v := int64(10); v <= 25; v++ {
		if _, err := deltalog.LoadStateAt(ctx, s, v, nil); err != nil {
			t.Fatalf("version %d after cleanup: %v", v, err)
		}
	}
	if _, err := deltalog.LoadStateAt(ctx, s, 9, nil); err == nil {
		t.Fatal("version 9 still loads")
	}
	if snap := load(t, s); snap.Version != 25 || snap.CheckpointVersion != 20 {
		t.Fatalf("snapshot %d from %d", snap.Version, snap.CheckpointVersion)
	}
	// A second run finds nothing more.
	if res := cleanup(t, s, 20, day0.Add(45*24*time.Hour+12*time.Hour)); len(res.Deleted) != 0 {
		t.Fatalf("second run deleted %v", res.Deleted)
	}
}

func TestCleanupEverythingExpired(t *testing.T) {
	for _, conf := range []string{"", `{"delta.logRetentionDuration":"interval 0 seconds"}`} {
		s := cleanupTable(t, protocolLine, conf, 25, []int64{10, 20}, nil)
		now := day0.Add(1000 * 24 * time.Hour)
		if conf != "" {
			now = day0.Add(26 * 24 * time.Hour) // only the retention of 0 expires everything
		}
		res := cleanup(t, s, 20, now)
		// Commits first, then .crc, then checkpoints.
		want := append(append(span64(0, 19, ".json"), span64(0, 19, ".crc")...), "10.checkpoint.parquet")
		if res.Boundary != 20 || !slices.Equal(shortNames(res.Deleted), want) {
			t.Fatalf("%s: boundary %d deleted %v", conf, res.Boundary, shortNames(res.Deleted))
		}
		left := logNames(t, s)
		for _, keep := range []string{"00000000000000000020.json", "00000000000000000020.checkpoint.parquet", "_last_checkpoint"} {
			if !slices.Contains(left, keep) {
				t.Fatalf("%s deleted: %v", keep, left)
			}
		}
		if st, err := deltalog.LoadState(ctx, s, nil); err != nil || st.NumFiles() != 25 {
			t.Fatalf("after cleanup: %v", err)
		}
	}
}

func TestCleanupNothingToDo(t *testing.T) {
	// Default retention, nothing older than 30 days.
	s := cleanupTable(t, protocolLine, "", 25, []int64{10, 20}, nil)
	if res := cleanup(t, s, 20, day0.Add(26*24*time.Hour)); len(res.Deleted) != 0 || res.Skipped != "" ||
		!res.NextCheck.Equal(day0.Add(30*24*time.Hour)) {
		t.Fatalf("%+v", res)
	}
	// Disabled.
	s = cleanupTable(t, protocolLine, `{"delta.enableExpiredLogCleanup":"false","delta.logRetentionDuration":"interval 0 seconds"}`, 25, []int64{10, 20}, nil)
	if res := cleanup(t, s, 20, day0.Add(1000*24*time.Hour)); len(res.Deleted) != 0 || !strings.Contains(res.Skipped, "enableExpiredLogCleanup") {
		t.Fatalf("%+v", res)
	}
	// An unparsable retention deletes nothing.
	s = cleanupTable(t, protocolLine, `{"delta.logRetentionDuration":"interval 1 month"}`, 25, []int64{10, 20}, nil)
	if res := cleanup(t, s, 20, day0.Add(1000*24*time.Hour)); len(res.Deleted) != 0 || res.Skipped == "" {
		t.Fatalf("%+v", res)
	}
	// No checkpoint at the version given.
	s = cleanupTable(t, protocolLine, "", 25, []int64{10}, nil)
	if res := cleanup(t, s, 20, day0.Add(1000*24*time.Hour)); len(res.Deleted) != 0 || !strings.Contains(res.Skipped, "no complete checkpoint") {
		t.Fatalf("%+v", res)
	}
}

// Commits keep their order under cleanup even when the clock did not: a
// commit with a recent modification time holds back everything after it.
func TestCleanupNonMonotonicTimes(t *testing.T) {
	recent := day0.Add(990 * 24 * time.Hour)
	s := cleanupTable(t, protocolLine, "", 25, []int64{3, 10, 20}, map[int64]time.Time{5: recent})
	res := cleanup(t, s, 20, day0.Add(1000*24*time.Hour))
	want := append(span64(0, 2, ".json"), span64(0, 2, ".crc")...)
	if res.Boundary != 3 || !slices.Equal(shortNames(res.Deleted), want) {
		t.Fatalf("boundary %d deleted %v", res.Boundary, shortNames(res.Deleted))
	}
}

// An old checkpoint file written late (not yet expired) is left alone, the
// commits it covers still go.
func TestCleanupUnexpiredOldCheckpoint(t *testing.T) {
	s := cleanupTable(t, protocolLine, "", 25, []int64{10, 20}, nil)
	late := day0.Add(995 * 24 * time.Hour)
	s.Now = func() time.Time { return late }
	st, _ := deltalog.LoadStateAt(ctx, s, 5, nil)
	data, _, _, _ := deltalog.EncodeCheckpoint(ctx, st, nil)
	s.Put(deltalog.CheckpointPath(5), data)
	// An incomplete multi-part checkpoint is never a boundary; a log
	// compaction file below the boundary goes.
	s.Now = func() time.Time { return day0 }
	s.Put("_delta_log/00000000000000000015.checkpoint.0000000001.0000000002.parquet", data)
	s.Put("_delta_log/00000000000000000002.00000000000000000004.compacted.json", []byte("{}"))
	res := cleanup(t, s, 20, day0.Add(1000*24*time.Hour))
	names := shortNames(res.Deleted)
	if res.Boundary != 20 || slices.Contains(names, "5.checkpoint.parquet") || !slices.Contains(names, "10.checkpoint.parquet") ||
		!slices.Contains(names, "15.checkpoint.0000000001.0000000002.parquet") || !slices.Contains(names, "2.00000000000000000004.compacted.json") {
		t.Fatalf("boundary %d deleted %v", res.Boundary, names)
	}
}

func TestCleanupCheckpointProtection(t *testing.T) {
	protected := `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["checkpointProtection"]}}`
	conf := `{"delta.requireCheckpointProtectionBeforeVersion":"15"}`
	// The boundary (10) is below the protected version: nothing goes.
	s := cleanupTable(t, protected, conf, 25, []int64{10, 20}, nil)
	res := cleanup(t, s, 20, day0.Add(45*24*time.Hour+12*time.Hour))
	if len(res.Deleted) != 0 || !strings.Contains(res.Skipped, "checkpointProtection") {
		t.Fatalf("%+v", res)
	}
	// At or past it, everything before goes in one go, commits before
	// checkpoints.
	res = cleanup(t, s, 20, day0.Add(1000*24*time.Hour))
	names := shortNames(res.Deleted)
	if res.Boundary != 20 || len(names) != 41 || names[len(names)-1] != "10.checkpoint.parquet" {
		t.Fatalf("boundary %d deleted %v", res.Boundary, names)
	}
	// Without the feature in the protocol the property means nothing.
	s = cleanupTable(t, protocolLine, conf, 25, []int64{10, 20}, nil)
	if res := cleanup(t, s, 20, day0.Add(45*24*time.Hour+12*time.Hour)); res.Boundary != 10 || len(res.Deleted) != 20 {
		t.Fatalf("%+v", res)
	}
}

// Sidecars are deleted without reading a checkpoint: those created more
// than SidecarReuseWindow before the boundary's commit, once expired. Every
// version the cleanup keeps still loads, from checkpoints whose sidecars
// were reused.
func TestCleanupSidecars(t *testing.T) {
	const v2Protocol = `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["v2Checkpoint"],"writerFeatures":["v2Checkpoint"]}}`
	s := deltalog.NewMemStore()
	var now time.Time
	s.Now = func() time.Time { return now }
	clock := func() time.Time { return now }
	cache := &deltalog.CheckpointCache{}
	var st *deltalog.State
	copied := int64(0)
	const latest = 60
	for v := int64(0); v <= latest; v++ {
		now = day0.Add(time.Duration(v) * 6 * time.Hour) // a commit every 6 hours
		if v == 0 {
			putCommit(s, 0, v2Protocol, metaDataLine(`{"delta.logRetentionDuration":"interval 2 days","delta.checkpointPolicy":"v2"}`))
			st = loadState(t, s)
			continue
		}
		line := addLine(fmt.Sprintf("p=a/%d.parquet", v), "a", v, "")
		putCommit(s, v, line)
		actions, err := deltalog.ParseActions([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Apply(v, actions); err != nil {
			t.Fatal(err)
		}
		if v%2 == 0 {
			now = now.Add(time.Minute)
			res, err := deltalog.WriteCheckpoint(ctx, s, st, &deltalog.CheckpointOptions{Cache: cache, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			copied += res.Cache.AddsCopied
		}
	}
	if copied == 0 {
		t.Fatal("no checkpoint reused a sidecar")
	}
	sidecars := func() int {
		files, _ := s.List(ctx, deltalog.SidecarDir, "")
		return len(files)
	}
	before := sidecars()
	// Day 16: commits up to day 14 expired; boundary checkpoint 56 (day 14).
	res := cleanup(t, s, latest, day0.Add(16*24*time.Hour))
	deleted := 0
	for _, p := range res.Deleted {
		if strings.HasPrefix(p, deltalog.SidecarDir) {
			deleted++
		}
	}
	if res.Boundary != 56 || deleted == 0 || deleted == before {
		t.Fatalf("boundary %d, %d of %d sidecars deleted", res.Boundary, deleted, before)
	}
	for v := res.Boundary; v <= latest; v++ {
		got, err := deltalog.LoadStateAt(ctx, s, v, nil)
		if err != nil {
			t.Fatalf("version %d after cleanup: %v", v, err)
		}
		if got.NumFiles() != int(v) {
			t.Fatalf("version %d: %d files", v, got.NumFiles())
		}
	}
	t.Logf("%d of %d sidecars deleted", deleted, before)
}
