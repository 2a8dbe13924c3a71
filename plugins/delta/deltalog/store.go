package deltalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"
)

// Store is the narrow view of an object store that snapshot loading and
// committing need. Paths are relative to the table root and use '/'
// ("_delta_log/00000000000000000007.json"). Backends (local, S3, Azure, GCS)
// live in another package and keep their conditional-write quirks to
// themselves; they report outcomes through the sentinels below.
type Store interface {
	// List returns the objects whose path starts with prefix and sorts
	// strictly after startAfter (byte-wise), in ascending byte-wise order, like
	// S3 ListObjectsV2 with StartAfter. An empty startAfter lists from the
	// beginning. Backends may include objects in "sub-directories" of prefix;
	// the loader ignores them. Pagination is the backend's business.
	List(ctx context.Context, prefix, startAfter string) ([]FileInfo, error)
	// Get returns the whole object. A missing object is ErrNotFound. The
	// caller must not modify the returned slice.
	Get(ctx context.Context, path string) ([]byte, error)
	// PutIfAbsent writes data only if path does not exist yet, atomically:
	// readers see all of data or nothing. An existing object is
	// ErrAlreadyExists, and the object is left untouched.
	PutIfAbsent(ctx context.Context, path string, data []byte) error
	// Delete removes path; deleting a missing object is not an error.
	Delete(ctx context.Context, path string) error
}

// RangeReader is implemented by stores that can read part of an object.
// The checkpoint reader uses it to fetch only the Parquet footer and the
// column chunks it needs instead of whole checkpoint files.
type RangeReader interface {
	// GetRange returns length bytes of path starting at offset.
	GetRange(ctx context.Context, path string, offset, length int64) ([]byte, error)
}

// Stater is implemented by stores that can describe one object more
// cheaply than by listing its path as a prefix. A local directory answers
// with a stat, where a listing reads and sorts every entry of _delta_log,
// whose length grows with the table's versions until log cleanup removes
// them. A missing object is ok false with a nil error, as a listing that
// does not hold it.
type Stater interface {
	Stat(ctx context.Context, path string) (fi FileInfo, ok bool, err error)
}

// StatObject describes the object at exactly path: with the store's Stat
// where it has one, otherwise by listing path as a prefix.
func StatObject(ctx context.Context, store Store, path string) (FileInfo, bool, error) {
	if s, ok := store.(Stater); ok {
		return s.Stat(ctx, path)
	}
	files, err := store.List(ctx, path, "")
	if err != nil {
		return FileInfo{}, false, err
	}
	for _, f := range files {
		if f.Path == path {
			return f, true, nil
		}
	}
	return FileInfo{}, false, nil
}

// FileInfo describes one listed object.
type FileInfo struct {
	Path    string
	Size    int64
	ModTime time.Time
}

// Storage outcome sentinels. ErrNotFound and ErrAlreadyExists are the io/fs
// values so a backend can report them without importing this package (and
// os.ErrNotExist / os.ErrExist from a local filesystem match as they are).
var (
	ErrNotFound      = fs.ErrNotExist
	ErrAlreadyExists = fs.ErrExist
	// ErrTransient marks a failure worth retrying as is (throttling, timeouts,
	// 5xx). Backends wrap it, or return an error with a Transient() bool
	// method; see IsTransient.
	ErrTransient = errors.New("deltalog: transient storage error")
)

// IsTransient reports whether err is a storage failure that may succeed when
// retried unchanged: it wraps ErrTransient, or some error in its chain has a
// Transient() bool method that returns true.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrTransient) {
		return true
	}
	var t interface{ Transient() bool }
	return errors.As(err, &t) && t.Transient()
}

// MemStore is an in-memory Store for tests and for callers that stage a log
// in memory. It is safe for concurrent use; PutIfAbsent is atomic.
type MemStore struct {
	mu    sync.RWMutex
	files map[string]memFile
	// Now stamps ModTime on writes; nil means time.Now.
	Now func() time.Time
}

type memFile struct {
	data    []byte
	modTime time.Time
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{files: map[string]memFile{}} }

func (m *MemStore) now() time.Time { return orNow(m.Now) }

// Put writes unconditionally (test setup; the Delta log itself is only ever
// written with PutIfAbsent).
func (m *MemStore) Put(path string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string]memFile{}
	}
	m.files[path] = memFile{data: slices.Clone(data), modTime: m.now()}
}

// List implements Store.
func (m *MemStore) List(ctx context.Context, prefix, startAfter string) ([]FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []FileInfo
	for p, f := range m.files {
		if strings.HasPrefix(p, prefix) && p > startAfter {
			out = append(out, FileInfo{Path: p, Size: int64(len(f.data)), ModTime: f.modTime})
		}
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Get implements Store. The returned slice is shared with the store and must
// not be modified (Store's contract); this keeps large test logs cheap.
func (m *MemStore) Get(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	f, ok := m.files[path]
	if !ok {
		return nil, fmt.Errorf("memstore: get %q: %w", path, ErrNotFound)
	}
	return f.data, nil
}

// GetRange implements RangeReader.
func (m *MemStore) GetRange(ctx context.Context, path string, offset, length int64) ([]byte, error) {
	data, err := m.Get(ctx, path)
	if err != nil {
		return nil, err
	}
	if offset < 0 || length < 0 || offset+length > int64(len(data)) {
		return nil, fmt.Errorf("memstore: range [%d,+%d) outside %q (%d bytes)", offset, length, path, len(data))
	}
	return data[offset : offset+length], nil
}

// PutIfAbsent implements Store.
func (m *MemStore) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[path]; ok {
		return fmt.Errorf("memstore: put %q: %w", path, ErrAlreadyExists)
	}
	if m.files == nil {
		m.files = map[string]memFile{}
	}
	m.files[path] = memFile{data: slices.Clone(data), modTime: m.now()}
	return nil
}

// Delete implements Store.
func (m *MemStore) Delete(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, path)
	return nil
}
