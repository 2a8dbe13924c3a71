package delta

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// maxUploads bounds the data files of one batch in flight at once: enough
// to keep an object store's round trips overlapped, few enough that a
// batch with hundreds of partitions neither opens hundreds of connections
// nor holds hundreds of encoded files in memory.
const maxUploads = 8

// uploads puts a batch's data files while the encoder writes the next
// ones: encode.Flush closes each file's writer once the file is complete,
// and that starts its upload. The first failure cancels the others and
// fails the next file the encoder opens, so a failed batch stops early.
type uploads struct {
	ctx    context.Context
	cancel context.CancelFunc
	store  objstore.Store
	slots  chan struct{}
	g      sdk.Group // recovers a panic in an upload as the batch's error

	mu      sync.Mutex
	started []string // files whose upload began, to discard if the batch fails
	err     error    // the first failure
}

func newUploads(ctx context.Context, store objstore.Store) *uploads {
	ctx, cancel := context.WithCancel(ctx)
	return &uploads{ctx: ctx, cancel: cancel, store: store, slots: make(chan struct{}, maxUploads)}
}

// open is the encode.OpenFunc of the batch.
func (u *uploads) open(t *encode.Target) (io.Writer, error) {
	if err := u.failure(); err != nil {
		return nil, err
	}
	return &uploadFile{u: u, path: t.Path}, nil
}

// wait waits for every upload started and returns the files whose upload
// began (all of them written on success; on failure some may be, so
// discard them all) and the first failure.
func (u *uploads) wait() ([]string, error) {
	gerr := u.g.Wait()
	u.cancel()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil {
		u.err = gerr
	}
	return u.started, u.err
}

func (u *uploads) failure() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

func (u *uploads) fail(err error) {
	u.mu.Lock()
	if u.err == nil {
		u.err = err
	}
	u.mu.Unlock()
	u.cancel()
}

// uploadFile buffers one data file; Close uploads it in the background,
// waiting for a free slot first (which holds the encoder back while
// maxUploads files are in flight).
type uploadFile struct {
	bytes.Buffer
	u    *uploads
	path string
}

func (f *uploadFile) Close() error {
	u := f.u
	select {
	case u.slots <- struct{}{}:
	case <-u.ctx.Done():
		if err := u.failure(); err != nil {
			return err
		}
		return u.ctx.Err()
	}
	u.mu.Lock()
	u.started = append(u.started, f.path)
	u.mu.Unlock()
	u.g.Go(func() error {
		defer func() { <-u.slots }()
		err := u.store.Put(u.ctx, f.path, f.Bytes())
		if err != nil {
			u.fail(err)
		}
		return err
	})
	return nil
}
