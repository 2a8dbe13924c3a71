package delta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

// faultyStore fails checkpoint writes while failPuts > 0, and blocks every
// read while block is set, until the call's context ends.
type faultyStore struct {
	*objstore.Local
	failPuts atomic.Int32
	block    atomic.Bool
	panics   atomic.Bool
}

func (f *faultyStore) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	if strings.Contains(path, ".checkpoint.") && f.failPuts.Add(-1) >= 0 {
		return errors.New("injected failure")
	}
	return f.Local.PutIfAbsent(ctx, path, data)
}

func (f *faultyStore) Get(ctx context.Context, path string) ([]byte, error) {
	if f.panics.Load() {
		panic("injected panic")
	}
	if f.block.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.Local.Get(ctx, path)
}

// appendTable makes a table with n appends and returns the snapshot after
// each version.
func appendTable(t *testing.T, n int) (*objstore.Local, []*deltalog.Snapshot) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	v0 := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" +
		`{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":0}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), []byte(v0), 0o644); err != nil {
		t.Fatal(err)
	}
	store, _ := objstore.NewLocal(dir)
	snap, err := deltalog.Load(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	snaps := []*deltalog.Snapshot{snap}
	for i := range n {
		res, err := deltalog.CommitAppend(context.Background(), store, snap, deltalog.AppendCommit{
			Files: []deltalog.DataFile{{Path: fmt.Sprintf("%d.parquet", i), Size: 1}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
		snaps = append(snaps, snap)
	}
	return store, snaps
}

type spawner struct{ wg sync.WaitGroup }

func (s *spawner) spawn(fn func(context.Context)) {
	s.wg.Add(1)
	go func() { defer s.wg.Done(); fn(context.Background()) }()
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A failed checkpoint is counted and logged; the next interval retries
// from where the state got to.
func TestCheckpointerRetriesAtTheNextInterval(t *testing.T) {
	local, snaps := appendTable(t, 20)
	store := &faultyStore{Local: local}
	store.failPuts.Store(1)
	stats := newCheckpointStats()
	sp := &spawner{}
	c := newCheckpointer("test", store, slog.New(slog.DiscardHandler), stats, sp.spawn)
	defer sp.wg.Wait()
	defer c.stop()

	c.committed(snaps[7], nil) // not due
	c.committed(snaps[10], nil)
	waitUntil(t, "a failure", func() bool { return stats.failures.Load() == 1 })
	if stats.written.Load() != 0 {
		t.Fatal("written despite the failure")
	}
	c.committed(snaps[20], nil)
	waitUntil(t, "checkpoint 20", func() bool { return stats.written.Load() == 1 })
	if stats.lastVersion.Load() != 20 {
		t.Fatalf("last version %d", stats.lastVersion.Load())
	}
	snap, err := deltalog.Load(context.Background(), local, nil)
	if err != nil || snap.CheckpointVersion != 20 {
		t.Fatalf("checkpoint %d, %v", snap.CheckpointVersion, err)
	}
	if _, err := os.Stat(filepath.Join(local.URI()[len("file://"):], filepath.FromSlash(deltalog.CheckpointPath(10)))); err == nil {
		t.Fatal("the failed checkpoint exists")
	}
}

// stop aborts a checkpoint stuck in I/O and ends the goroutine.
func TestCheckpointerStopIsPrompt(t *testing.T) {
	local, snaps := appendTable(t, 10)
	store := &faultyStore{Local: local}
	store.block.Store(true)
	sp := &spawner{}
	c := newCheckpointer("test", store, slog.New(slog.DiscardHandler), newCheckpointStats(), sp.spawn)
	c.committed(snaps[10], nil)
	time.Sleep(50 * time.Millisecond) // let it block in a read
	c.stop()
	done := make(chan struct{})
	go func() { sp.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("checkpointer did not stop")
	}
	c.committed(snaps[10], nil) // after stop: ignored, no new goroutine
	sp.wg.Wait()
}

func TestCheckpointInterval(t *testing.T) {
	for raw, want := range map[string]int64{"": 10, "100": 100, "1": 1, "0": 10, "-5": 10, "x": 10, " 7 ": 7} {
		md := &deltalog.Metadata{Configuration: map[string]string{}}
		if raw != "" {
			md.Configuration["delta.checkpointInterval"] = raw
		}
		if got := checkpointInterval(md); got != want {
			t.Errorf("%q: %d, want %d", raw, got, want)
		}
	}
}

// A panic while checkpointing is a failure like any other, not a crash.
func TestCheckpointerSurvivesAPanic(t *testing.T) {
	local, snaps := appendTable(t, 20)
	store := &faultyStore{Local: local}
	store.panics.Store(true)
	stats := newCheckpointStats()
	sp := &spawner{}
	c := newCheckpointer("test", store, slog.New(slog.DiscardHandler), stats, sp.spawn)
	defer sp.wg.Wait()
	defer c.stop()
	c.committed(snaps[10], nil)
	waitUntil(t, "a failure", func() bool { return stats.failures.Load() == 1 })
	store.panics.Store(false)
	c.committed(snaps[20], nil)
	waitUntil(t, "checkpoint 20", func() bool { return stats.written.Load() == 1 })
}

// countingStore records the paths read with Get.
type countingStore struct {
	*objstore.Local
	mu   sync.Mutex
	gets []string
}

func (s *countingStore) Get(ctx context.Context, path string) ([]byte, error) {
	s.mu.Lock()
	s.gets = append(s.gets, path)
	s.mu.Unlock()
	return s.Local.Get(ctx, path)
}

// commitsRead returns the commit files read since the last call.
func (s *countingStore) commitsRead() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.gets {
		if strings.HasSuffix(p, ".json") {
			out = append(out, p)
		}
	}
	s.gets = nil
	return out
}

// The commits this process wrote reach the checkpointer from memory: after
// the first checkpoint (which loads the table), it reads only the commit
// another writer made, never its own.
func TestCheckpointerTakesItsOwnCommitsFromMemory(t *testing.T) {
	local, snaps := appendTable(t, 10)
	store := &countingStore{Local: local}
	stats := newCheckpointStats()
	sp := &spawner{}
	c := newCheckpointer("test", store, slog.New(slog.DiscardHandler), stats, sp.spawn)
	defer sp.wg.Wait()
	defer c.stop()

	c.committed(snaps[10], nil)
	waitUntil(t, "checkpoint 10", func() bool { return stats.written.Load() == 1 })
	if got := store.commitsRead(); len(got) == 0 {
		t.Fatal("the first checkpoint read no commit: it cannot have loaded the table")
	}

	snap := snaps[10]
	for v := int64(11); v <= 25; v++ {
		res, err := deltalog.CommitAppend(context.Background(), local, snap, deltalog.AppendCommit{
			Files: []deltalog.DataFile{{Path: fmt.Sprintf("%d.parquet", v), Size: v}}}, nil)
		if err != nil || res.Version != v || res.Actions == nil {
			t.Fatalf("commit %d: %+v %v", v, res, err)
		}
		snap = res.Snapshot
		if v == 15 {
			continue // another writer's commit: this process did not write it
		}
		c.committed(snap, res.Actions)
	}
	waitUntil(t, "checkpoint 20", func() bool { return stats.written.Load() == 2 && stats.lastVersion.Load() == 20 })
	if got, want := store.commitsRead(), []string{deltalog.CommitPath(15)}; !slices.Equal(got, want) {
		t.Fatalf("commits read for checkpoint 20: %v, want only %v", got, want)
	}
	if m, r := stats.commitsFromMemory.Load(), stats.commitsRead.Load(); m != 9 || r != 1 {
		t.Fatalf("commits from memory %d, read %d; want 9 and 1", m, r)
	}
	st, err := deltalog.LoadStateAt(context.Background(), local, 20, nil)
	if err != nil || st.CheckpointVersion != 20 || st.NumFiles() != 20 {
		t.Fatalf("state from checkpoint 20: %v", err)
	}
	for i := range 10 { // appendTable's files
		if _, ok := st.File(fmt.Sprintf("%d.parquet", i)); !ok {
			t.Fatalf("file %d.parquet missing from checkpoint 20", i)
		}
	}
	for v := 11; v <= 20; v++ {
		if _, ok := st.File(fmt.Sprintf("%d.parquet", v)); !ok {
			t.Fatalf("file of version %d missing from checkpoint 20", v)
		}
	}
}
