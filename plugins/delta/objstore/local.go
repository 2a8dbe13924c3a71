package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Modes of what Local creates, before the umask, as for any file a program
// creates: the umask, not the sink, decides who else may read the table.
// Data and log files get the same mode.
const (
	fileMode fs.FileMode = 0o666
	dirMode  fs.FileMode = 0o777
)

// Local is a table on the local filesystem.
type Local struct {
	root  string
	syncs *atomic.Int64 // counts every fsync and syncfs, when set (CountSyncs)
	// onSync, when set (tests), sees the name of every file or directory
	// synced, after the sync succeeded ("syncfs:" + the table root for a
	// filesystem sync).
	onSync func(name string)

	// syncFS is LocalOptions.SyncFilesystem: the syncs of a batch's data
	// files and of the directories that gained them are left to the one
	// syncfs(2) that the next PutIfAbsent (the commit) makes.
	syncFS bool
	fsMu   sync.Mutex
	fs     *os.File // the table root, open from the first write on (tableFS)
	fsDev  uint64   // the filesystem fs is on
	fsErr  error    // the first failed syncfs: every later one fails with it (syncTableFS)
	fsNot  bool     // the table's filesystem is not one of syncfsTypes: fsync file by file
	closed bool
}

// syncfs is unix.Syncfs; tests replace it to make it fail.
var syncfs = unix.Syncfs

// syncfsTypes are the filesystems whose syncfs(2) writes out data and
// reports write-back errors as fsync would: ext4, XFS and Btrfs. Elsewhere
// (FUSE, whose syncfs does not reach the server; NFS; overlays) the
// filesystem mode fsyncs file by file, as the default does.
var syncfsTypes = map[int64]bool{0xEF53: true, 0x58465342: true, 0x9123683E: true}

// CountSyncs makes l add one to c for every fsync it makes, of a file or
// a directory: the sink's "fsyncs" metric, which tests use to prove data
// files and commits are synced and the bench prints per batch. Call it
// before l is used.
func (l *Local) CountSyncs(c *atomic.Int64) { l.syncs = c }

// sync makes f (a file or a directory) durable by the time the next
// commit is: it fsyncs f, or, with syncFS, leaves it to the commit's
// syncfs when f is on the table's filesystem (a partition directory
// mounted or linked elsewhere is fsynced as ever).
func (l *Local) sync(f *os.File) error {
	if l.syncFS {
		root, dev, err := l.tableFS()
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return fmt.Errorf("stat %s: %w", f.Name(), err)
		}
		if root != nil && uint64(st.Dev) == dev {
			return nil
		}
	}
	return l.syncNow(f)
}

// syncNow fsyncs f and counts it.
func (l *Local) syncNow(f *os.File) error {
	if l.syncs != nil {
		l.syncs.Add(1)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if l.onSync != nil {
		l.onSync(f.Name())
	}
	return nil
}

// tableFS returns the table root, opened once with syncFS, and the
// filesystem it is on; nil while the root does not exist yet (a table the
// first commit creates: its first files are fsynced one by one).
//
// The root stays open for as long as l is used: syncfs reports a write-back
// error to every open file of the filesystem that has not seen it yet
// (Linux 5.8 and later), so an error in writing out a data file is
// reported to the commit's syncfs even when another program's syncfs or
// fsync has already seen it. A descriptor opened just for the syncfs
// would miss those.
//
// A filesystem not in syncfsTypes gives nil too, for good: every file is
// then fsynced.
func (l *Local) tableFS() (*os.File, uint64, error) {
	l.fsMu.Lock()
	defer l.fsMu.Unlock()
	if l.closed {
		return nil, 0, fmt.Errorf("table %s: store closed", l.root)
	}
	if l.fs != nil || !l.syncFS || l.fsNot {
		return l.fs, l.fsDev, nil
	}
	f, err := os.Open(l.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var st unix.Stat_t
	var sfs unix.Statfs_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("stat %s: %w", l.root, err)
	}
	if err := unix.Fstatfs(int(f.Fd()), &sfs); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("statfs %s: %w", l.root, err)
	}
	if !syncfsTypes[int64(sfs.Type)] { // see SyncfsCovers
		f.Close()
		l.fsNot = true
		return nil, 0, nil
	}
	l.fs, l.fsDev = f, uint64(st.Dev)
	return l.fs, l.fsDev, nil
}

// syncTableFS is the commit's syncfs with syncFS: it writes out everything
// of the table's filesystem, the batch's data files, their directories and
// the commit's temporary file among it.
//
// syncfs reports a write-back error once per open file, and every syncfs of
// this store (the batches' commits, the checkpointer's files) goes through
// the one root: whichever comes first after the error gets it. So the
// first failure is kept and every later syncfs fails with it: a later
// commit must not take a quiet syncfs for proof that the files of an
// earlier, failed one are on disk, nor commit after a lost race on top of
// them. The table then refuses commits until the sink is opened again, as
// PostgreSQL stops after a failed fsync: which files were lost is unknown.
func (l *Local) syncTableFS() error {
	root, _, err := l.tableFS()
	if err != nil || root == nil {
		return err
	}
	l.fsMu.Lock()
	defer l.fsMu.Unlock()
	if l.fsErr != nil {
		return l.fsErr
	}
	if l.syncs != nil {
		l.syncs.Add(1)
	}
	if err := syncfs(int(root.Fd())); err != nil {
		l.fsErr = fmt.Errorf("syncfs %s: %w (a write to the table's filesystem failed: file_sync = filesystem refuses every commit on this table until the sink is opened again)", l.root, err)
		return l.fsErr
	}
	if l.onSync != nil {
		l.onSync("syncfs:" + l.root)
	}
	return nil
}

// Close releases the table root that the filesystem mode keeps open. The
// store is not used after it.
func (l *Local) Close() error {
	l.fsMu.Lock()
	defer l.fsMu.Unlock()
	l.closed = true
	if l.fs == nil {
		return nil
	}
	err := l.fs.Close()
	l.fs = nil
	return err
}

// NewLocal returns the store for the table directory root.
func NewLocal(root string) (*Local, error) {
	if root == "" || !filepath.IsAbs(root) {
		return nil, &URIError{msg: message{"file path %q is not absolute", []any{root}}}
	}
	return &Local{root: filepath.Clean(root)}, nil
}

// URI implements Store.
func (l *Local) URI() string { return "file://" + l.root }

func (l *Local) abs(p string) string { return filepath.Join(l.root, filepath.FromSlash(p)) }

// List implements deltalog.Store. It lists the directory holding prefix (the
// Delta log is flat) and filters by name.
func (l *Local) List(ctx context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	dir, namePrefix := "", prefix
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dir, namePrefix = prefix[:i+1], prefix[i+1:]
	}
	entries, err := os.ReadDir(l.abs(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l.abs(dir), err)
	}
	var out []deltalog.FileInfo
	for _, e := range entries {
		p := dir + e.Name()
		if e.IsDir() || !strings.HasPrefix(e.Name(), namePrefix) || p <= startAfter {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since ReadDir, e.g. by log cleanup
		}
		if err != nil {
			return nil, err
		}
		out = append(out, deltalog.FileInfo{Path: p, Size: info.Size(), ModTime: info.ModTime()})
	}
	slices.SortFunc(out, func(a, b deltalog.FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Stat implements deltalog.Stater: one lstat, not a read of the whole
// directory as List (the checkpointer asks whether a checkpoint exists
// before writing it, and _delta_log holds every version until cleanup).
// Like List it does not report directories.
func (l *Local) Stat(ctx context.Context, p string) (deltalog.FileInfo, bool, error) {
	info, err := os.Lstat(l.abs(p))
	if errors.Is(err, fs.ErrNotExist) {
		return deltalog.FileInfo{}, false, nil
	}
	if err != nil {
		return deltalog.FileInfo{}, false, fmt.Errorf("stat %s: %w", p, err)
	}
	if info.IsDir() {
		return deltalog.FileInfo{}, false, nil
	}
	return deltalog.FileInfo{Path: p, Size: info.Size(), ModTime: info.ModTime()}, true, nil
}

// Get implements deltalog.Store.
func (l *Local) Get(ctx context.Context, p string) ([]byte, error) {
	data, err := os.ReadFile(l.abs(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get %s: %w", p, deltalog.ErrNotFound)
	}
	return data, err
}

// GetRange implements deltalog.RangeReader.
func (l *Local) GetRange(ctx context.Context, p string, offset, length int64) ([]byte, error) {
	f, err := os.Open(l.abs(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get %s: %w", p, deltalog.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil && !(errors.Is(err, io.EOF) && length == 0) {
		return nil, fmt.Errorf("read %s [%d,+%d): %w", p, offset, length, err)
	}
	return buf, nil
}

// Put implements Store for data files. Their names are unique and no reader
// looks at a file before a commit references it, so the file is written in
// place (O_EXCL: a name clash is an error, never an overwrite) and synced
// together with its directory entry before the commit that names it: before
// Put returns, or with syncFS by the syncfs of that commit's PutIfAbsent.
//
// The directory is created only when the create finds it missing: a batch
// of a partitioned table writes one file into each of several existing
// partition directories, and a stat before every create was one system
// call per file for nothing.
func (l *Local) Put(ctx context.Context, p string, data []byte) error {
	if l.syncFS {
		if _, _, err := l.tableFS(); err != nil { // open before the write: see tableFS
			return fmt.Errorf("put %s: %w", p, err)
		}
	}
	dst := l.abs(p)
	f, err := createExcl(dst)
	if errors.Is(err, fs.ErrNotExist) {
		if err = l.mkdirAllSynced(filepath.Dir(dst)); err == nil {
			f, err = createExcl(dst)
		}
	}
	if err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	}
	_, werr := f.Write(data)
	serr := l.sync(f)
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(dst)
		return fmt.Errorf("put %s: %w", p, err)
	}
	return l.syncDir(filepath.Dir(dst))
}

func createExcl(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
}

// PutIfAbsent implements deltalog.Store. The data goes to a temporary file
// first and is then moved into place with renameat2(RENAME_NOREPLACE), or a
// hard link where the filesystem lacks it: both fail atomically when the
// name is taken, which a plain rename (silently replacing a commit another
// writer made) never does. With syncFS one syncfs before the rename makes
// the temporary file durable together with every data file Put left to it.
func (l *Local) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	tmp, err := l.writeTemp(p, data)
	if err != nil {
		return err
	}
	if l.syncFS {
		if err := l.syncTableFS(); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("put %s: %w", p, err)
		}
	}
	dst := l.abs(p)
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		err = os.Link(tmp, dst)
		os.Remove(tmp) // after a link, or none, the temporary name is left over
	} else if err != nil {
		os.Remove(tmp) // the rename did not happen
	}
	if errors.Is(err, fs.ErrExist) || errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("put %s: %w", p, deltalog.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	}
	// The rename itself: nothing after it would sync it, so never deferred.
	return l.syncDirNow(filepath.Dir(dst))
}

// writeTemp writes data to a new temporary file beside p and returns its
// name. The file is created with fileMode, not os.CreateTemp's 0600: it is
// renamed into place as a log file that readers running as other users
// (Spark, BI tools) must be able to read like the data files.
func (l *Local) writeTemp(p string, data []byte) (string, error) {
	if l.syncFS {
		if _, _, err := l.tableFS(); err != nil { // open before the write: see tableFS
			return "", fmt.Errorf("write %s: %w", p, err)
		}
	}
	dst := l.abs(p)
	dir, prefix := filepath.Dir(dst), "."+filepath.Base(dst)+"."
	f, err := createTemp(dir, prefix, ".tmp")
	if errors.Is(err, fs.ErrNotExist) { // the first file in a new directory
		if err = l.mkdirAllSynced(dir); err == nil {
			f, err = createTemp(dir, prefix, ".tmp")
		}
	}
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	serr := l.sync(f)
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	return f.Name(), nil
}

// mkdirAllSynced is os.MkdirAll that also syncs the parent of every
// directory it creates, so a new partition directory survives a crash as
// surely as the data file inside it that a commit will name.
func (l *Local) mkdirAllSynced(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := l.mkdirAllSynced(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, dirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // created concurrently by another upload
		}
		return err
	}
	return l.syncDir(parent)
}

// syncDir syncs dir as sync does: possibly left to the commit's syncfs.
func (l *Local) syncDir(dir string) error { return l.withDir(dir, l.sync) }

// syncDirNow fsyncs dir before it returns.
func (l *Local) syncDirNow(dir string) error { return l.withDir(dir, l.syncNow) }

func (l *Local) withDir(dir string, sync func(*os.File) error) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return sync(d)
}

// Delete implements deltalog.Store.
func (l *Local) Delete(ctx context.Context, p string) error {
	err := os.Remove(l.abs(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// createTemp is os.CreateTemp with fileMode instead of 0600: it creates a
// new file named prefix + random + suffix in dir.
func createTemp(dir, prefix, suffix string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36)+suffix)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("create a temporary file in %s: too many name clashes", dir)
}

// checkSyncfs refuses LocalOptions.SyncFilesystem on a kernel older than
// Linux 5.8: its syncfs returns success even when writing a file out
// failed, which would let a commit name a data file that never reached
// the disk.
func checkSyncfs() error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return invalid(BackendLocal, OptLocalSyncFilesystem, "%s: cannot tell the kernel version: %v", OptLocalSyncFilesystem, err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	if !kernelAtLeast(release, 5, 8) {
		return invalid(BackendLocal, OptLocalSyncFilesystem, "%s needs Linux 5.8 or later, whose syncfs reports write errors; this kernel is %s", OptLocalSyncFilesystem, release)
	}
	return nil
}

// kernelAtLeast reports whether a kernel release ("6.1.0-18-amd64",
// "5.15.153.1-microsoft-standard") is major.minor or later.
func kernelAtLeast(release string, major, minor int) bool {
	fields := strings.FieldsFunc(release, func(r rune) bool { return r < '0' || r > '9' })
	if len(fields) < 2 {
		return false
	}
	gotMajor, err1 := strconv.Atoi(fields[0])
	gotMinor, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return gotMajor > major || gotMajor == major && gotMinor >= minor
}

// SyncfsCovers reports whether LocalOptions.SyncFilesystem would leave the
// data files of a table in dir to one syncfs: a kernel that reports
// write-back errors to it (checkSyncfs) and one of syncfsTypes. Elsewhere
// the option is refused or fsyncs file by file.
func SyncfsCovers(dir string) bool {
	var sfs unix.Statfs_t
	return checkSyncfs() == nil && unix.Statfs(dir, &sfs) == nil && syncfsTypes[int64(sfs.Type)]
}
