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
	syncs *atomic.Int64 // counts every fsync, when set (CountSyncs)
	// onSync, when set (tests), sees the name of every file or directory
	// synced, after the sync succeeded.
	onSync func(name string)
}

// CountSyncs makes l add one to c for every fsync it makes, of a file or
// a directory: the sink's "fsyncs" metric, which tests use to prove data
// files and commits are synced and the bench prints per batch. Call it
// before l is used.
func (l *Local) CountSyncs(c *atomic.Int64) { l.syncs = c }

// sync fsyncs f (a file or a directory) and counts it.
func (l *Local) sync(f *os.File) error {
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
// together with its directory entry before the commit that names it.
//
// The directory is created only when the create finds it missing: a batch
// of a partitioned table writes one file into each of several existing
// partition directories, and a stat before every create was one system
// call per file for nothing.
func (l *Local) Put(ctx context.Context, p string, data []byte) error {
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
// writer made) never does.
func (l *Local) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	tmp, err := l.writeTemp(p, data)
	if err != nil {
		return err
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
	return l.syncDir(filepath.Dir(dst))
}

// writeTemp writes data to a new temporary file beside p and returns its
// name. The file is created with fileMode, not os.CreateTemp's 0600: it is
// renamed into place as a log file that readers running as other users
// (Spark, BI tools) must be able to read like the data files.
func (l *Local) writeTemp(p string, data []byte) (string, error) {
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

func (l *Local) syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return l.sync(d)
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
