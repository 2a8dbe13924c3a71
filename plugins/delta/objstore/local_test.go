package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

func TestOpenRejectsBadURIs(t *testing.T) {
	for _, uri := range []string{"/data/delta/orders", "orders", "file://host/x", "ftp://x/y", "s3:///nobucket", "file:relative"} {
		if _, err := openURI(context.Background(), uri, objstore.Options{}); err == nil || !containsInvalid(err) {
			t.Errorf("%s: %v", uri, err)
		}
	}
}

// openURI parses uri and opens its store, as the sink does: options that
// name their backend are validated first.
func openURI(ctx context.Context, uri string, opts objstore.Options) (objstore.Store, error) {
	loc, err := objstore.ParseLocation(uri)
	if err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return objstore.Open(ctx, loc, opts)
}

func containsInvalid(err error) bool {
	return len(err.Error()) >= 17 && err.Error()[:17] == "Invalid table URI"
}

// storeContract exercises any Store; the S3 tests run it against MinIO.
func storeContract(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	if err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("v0")); err != nil {
		t.Fatal(err)
	}
	err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("other"))
	if !errors.Is(err, deltalog.ErrAlreadyExists) {
		t.Fatalf("second put-if-absent: %v", err)
	}
	if got, _ := s.Get(ctx, "_delta_log/00000000000000000000.json"); string(got) != "v0" {
		t.Fatalf("losing put changed the object: %q", got)
	}
	if _, err := s.Get(ctx, "_delta_log/missing.json"); !errors.Is(err, deltalog.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	for i := 1; i <= 3; i++ {
		if err := s.PutIfAbsent(ctx, fmt.Sprintf("_delta_log/%020d.json", i), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "region=eu/part-1.parquet", []byte("data")); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ctx, "_delta_log/", "_delta_log/00000000000000000001.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Path != "_delta_log/00000000000000000002.json" || got[1].Path != "_delta_log/00000000000000000003.json" || got[1].Size != 1 {
		t.Fatalf("list: %+v", got)
	}
	got, _ = s.List(ctx, "_delta_log/0000000000000000000", "")
	if len(got) != 4 {
		t.Fatalf("list by name prefix: %+v", got)
	}
	if b, err := s.GetRange(ctx, "region=eu/part-1.parquet", 1, 2); err != nil || string(b) != "at" {
		t.Fatalf("range: %q %v", b, err)
	}
	if err := s.Delete(ctx, "region=eu/part-1.parquet"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "region=eu/part-1.parquet"); err != nil {
		t.Fatalf("deleting a missing object: %v", err)
	}
	if _, err := s.Get(ctx, "region=eu/part-1.parquet"); !errors.Is(err, deltalog.ErrNotFound) {
		t.Fatalf("deleted object still there: %v", err)
	}

	// Racing writers for one version: exactly one wins.
	const racers = 8
	var wg sync.WaitGroup
	wins := make(chan int, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000004.json", []byte(fmt.Sprint(i)))
			if err == nil {
				wins <- i
			} else if !errors.Is(err, deltalog.ErrAlreadyExists) && !deltalog.IsTransient(err) {
				t.Errorf("racer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	close(wins)
	var winners []int
	for w := range wins {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("winners %v", winners)
	}
	if b, _ := s.Get(ctx, "_delta_log/00000000000000000004.json"); string(b) != fmt.Sprint(winners[0]) {
		t.Fatalf("content %q is not the winner's %d", b, winners[0])
	}
}

func TestLocalStoreContract(t *testing.T) {
	dir := t.TempDir()
	s, err := openURI(context.Background(), "file://"+dir, objstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storeContract(t, s)
	// No temporary files are left behind by put-if-absent.
	entries, _ := os.ReadDir(filepath.Join(dir, "_delta_log"))
	for _, e := range entries {
		if e.Name()[0] == '.' {
			t.Errorf("left over %s", e.Name())
		}
	}
	if s.URI() != "file://"+dir {
		t.Errorf("URI %s", s.URI())
	}
}

func TestLocalListOfMissingDirectoryIsEmpty(t *testing.T) {
	s, _ := objstore.NewLocal(t.TempDir())
	got, err := s.List(context.Background(), "_delta_log/", "")
	if err != nil || len(got) != 0 {
		t.Fatalf("%v %v", got, err)
	}
}

// processUmask reads the umask without changing it (unix.Umask would, for
// every goroutine of the test binary at once).
func processUmask(t *testing.T) os.FileMode {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				t.Fatal(err)
			}
			return os.FileMode(n)
		}
	}
	t.Fatal("no Umask line in /proc/self/status")
	return 0
}

// Log files (PutIfAbsent, through a temporary file) get the mode data files
// (Put) get: 0666 less the umask, so other users' readers see the table.
func TestLocalFileModesFollowUmask(t *testing.T) {
	want := 0o666 &^ processUmask(t)
	dir := t.TempDir()
	s, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "region=eu/part-0.parquet", []byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"region=eu/part-0.parquet", "_delta_log/00000000000000000000.json"} {
		info, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
}

// TestLocalSyncsWhatItWrites pins the durability of file:// tables: a data
// file is synced, then its directory (and the parent of a directory Put
// created); a commit's temporary file is synced before it is renamed into
// place, then the log directory. Nothing else, nothing less.
// With SyncFilesystem, data files and the directories that gained them are
// left to the commit: PutIfAbsent makes one syncfs of the table's
// filesystem before its rename and fsyncs the log directory after it. A
// partition directory on another filesystem (here a link to /dev/shm) is
// not covered by that syncfs, so its file and directory are fsynced by Put
// as without the option.
func TestLocalSyncFilesystemLeavesDataFilesToTheCommit(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	if !objstore.SyncfsCovers(root) {
		t.Skip("syncfs does not cover this temporary directory's filesystem, or this kernel is older than 5.8")
	}
	l, err := openURI(ctx, "file://"+root, objstore.Options{Local: objstore.LocalOptions{SyncFilesystem: true}})
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	objstore.OnSync(l.(*objstore.Local), func(name string) { synced = append(synced, strings.TrimPrefix(name, root)) })
	expect := func(what string, want ...string) {
		t.Helper()
		if !slices.Equal(synced, want) {
			t.Errorf("%s synced %q, want %q", what, synced, want)
		}
		synced = nil
	}

	for _, p := range []string{"region=eu/part-0.parquet", "region=eu/part-1.parquet", "region=us/part-2.parquet"} {
		if err := l.Put(ctx, p, []byte("data "+p)); err != nil {
			t.Fatal(err)
		}
	}
	expect("Put (new directories too)")
	if err := l.PutIfAbsent(ctx, "_delta_log/00000000000000000001.json", []byte("commit")); err != nil {
		t.Fatal(err)
	}
	expect("PutIfAbsent", "syncfs:"+root, "/_delta_log")
	for p, want := range map[string]string{"region=eu/part-1.parquet": "data region=eu/part-1.parquet",
		"region=us/part-2.parquet": "data region=us/part-2.parquet", "_delta_log/00000000000000000001.json": "commit"} {
		if got, err := l.Get(ctx, p); err != nil || string(got) != want {
			t.Errorf("%s: %q %v, want %q", p, got, err, want)
		}
	}

	var shm, tmp syscall.Stat_t
	if syscall.Stat("/dev/shm", &shm) != nil || syscall.Stat(root, &tmp) != nil || shm.Dev == tmp.Dev {
		t.Skip("no /dev/shm on another filesystem than the test's temporary directory")
	}
	elsewhere, err := os.MkdirTemp("/dev/shm", "picomq-sync-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(elsewhere)
	if err := os.Symlink(elsewhere, filepath.Join(root, "region=ap")); err != nil {
		t.Fatal(err)
	}
	if err := l.Put(ctx, "region=ap/part-3.parquet", []byte("data")); err != nil {
		t.Fatal(err)
	}
	expect("Put onto another filesystem", "/region=ap/part-3.parquet", "/region=ap")
}

// A failed syncfs fails every later commit of the store, though the kernel
// reports a write-back error to one syncfs only: here the checkpointer's
// (any PutIfAbsent) gets it, and the next batch's commit must not take its
// own quiet syncfs for proof that its data file is on disk.
func TestLocalSyncfsFailureFailsEveryLaterCommit(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	if !objstore.SyncfsCovers(root) {
		t.Skip("syncfs does not cover this temporary directory's filesystem, or this kernel is older than 5.8")
	}
	s, err := openURI(ctx, "file://"+root, objstore.Options{Local: objstore.LocalOptions{SyncFilesystem: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.(*objstore.Local).Close()
	if err := s.Put(ctx, "part-0.parquet", []byte("data")); err != nil {
		t.Fatal(err)
	}
	defer objstore.FailSyncfsOnce(syscall.EIO)()
	if err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000010.checkpoint.parquet", []byte("ckpt")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("checkpoint put: %v, want EIO", err)
	}
	for range 2 {
		err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000011.json", []byte("commit"))
		if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "until the sink is opened again") {
			t.Errorf("commit after the failed syncfs: %v, want the EIO again", err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(root, "_delta_log"))
	if len(entries) != 0 {
		t.Errorf("_delta_log holds %v after failed puts, want nothing (no commit, no temporary file)", entries)
	}
}

// The same through CommitAppend when another writer took the version: the
// failed put reads back the winner, a conflict, and the retry at the next
// version must fail too instead of committing the data file whose
// write-back failed.
func TestLocalSyncfsFailureThenLostRaceCommitsNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	if !objstore.SyncfsCovers(root) {
		t.Skip("syncfs does not cover this temporary directory's filesystem, or this kernel is older than 5.8")
	}
	if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	v0 := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" +
		`{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":0}}` + "\n"
	if err := os.WriteFile(filepath.Join(root, "_delta_log", "00000000000000000000.json"), []byte(v0), 0o644); err != nil {
		t.Fatal(err)
	}
	ours, err := openURI(ctx, "file://"+root, objstore.Options{Local: objstore.LocalOptions{SyncFilesystem: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer ours.(*objstore.Local).Close()
	peer, _ := objstore.NewLocal(root)
	snap, err := deltalog.Load(ctx, ours, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ours.Put(ctx, "part-0.parquet", []byte("data")); err != nil {
		t.Fatal(err)
	}
	peerSnap, err := deltalog.Load(ctx, peer, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deltalog.CommitAppend(ctx, peer, peerSnap, deltalog.AppendCommit{AppID: "peer", AppVersion: 1}, nil); err != nil {
		t.Fatal(err)
	}
	defer objstore.FailSyncfsOnce(syscall.EIO)()
	// SkipCatchUp, as the sink while it is alone: the put of version 1
	// comes first, and its read-back finds the peer's commit.
	res, err := deltalog.CommitAppend(ctx, ours, snap, deltalog.AppendCommit{
		Files: []deltalog.DataFile{{Path: "part-0.parquet", Size: 4, ModificationTime: 1}}}, &deltalog.CommitOptions{SkipCatchUp: true})
	if err == nil {
		t.Fatalf("commit OK at version %d after its syncfs failed", res.Version)
	}
	final, err := deltalog.Load(ctx, peer, nil)
	if err != nil || final.Version != 1 {
		t.Errorf("table at version %v (%v), want 1: the peer's commit and nothing of ours", final.Version, err)
	}
}

func TestKernelAtLeast(t *testing.T) {
	for release, want := range map[string]bool{
		"5.8.0": true, "5.7.19": false, "6.1.0-18-amd64": true, "4.19.0": false, "5.15.153.1-microsoft-standard-WSL2": true,
		"10.0": true, "5": false, "": false, "x.y": false, "6.18.44-fc-v669": true,
	} {
		if got := objstore.KernelAtLeast(release, 5, 8); got != want {
			t.Errorf("%q: %v, want %v", release, got, want)
		}
	}
}

func TestLocalSyncsWhatItWrites(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	l, err := objstore.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	objstore.OnSync(l, func(name string) { synced = append(synced, strings.TrimPrefix(name, root)) })
	expect := func(what string, want ...string) {
		t.Helper()
		if !slices.Equal(synced, want) {
			t.Errorf("%s synced %q, want %q", what, synced, want)
		}
		synced = nil
	}

	if err := l.Put(ctx, "region=eu/part-0.parquet", []byte("data")); err != nil {
		t.Fatal(err)
	}
	expect("Put into a new directory", "", "/region=eu/part-0.parquet", "/region=eu")
	if err := l.Put(ctx, "region=eu/part-1.parquet", []byte("data")); err != nil {
		t.Fatal(err)
	}
	expect("Put", "/region=eu/part-1.parquet", "/region=eu")

	if err := os.Mkdir(filepath.Join(root, "_delta_log"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := l.PutIfAbsent(ctx, "_delta_log/00000000000000000001.json", []byte("commit")); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 || !strings.HasPrefix(synced[0], "/_delta_log/.00000000000000000001.json.") ||
		!strings.HasSuffix(synced[0], ".tmp") || synced[1] != "/_delta_log" {
		t.Errorf("PutIfAbsent synced %q, want the temporary file, then /_delta_log", synced)
	}
	synced = nil
	if err := l.PutIfAbsent(ctx, "_delta_log/00000000000000000001.json", []byte("other")); !errors.Is(err, deltalog.ErrAlreadyExists) {
		t.Fatalf("second PutIfAbsent: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "_delta_log"))
	if len(entries) != 1 {
		t.Errorf("a lost PutIfAbsent left files behind: %v", entries)
	}
}
