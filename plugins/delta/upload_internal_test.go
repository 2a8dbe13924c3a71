package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

// putStore records Puts, holds each for a moment, and fails the paths in
// fail.
type putStore struct {
	objstore.Store // nil: only Put is called
	fail           map[string]bool

	inFlight, maxInFlight atomic.Int64
	mu                    sync.Mutex
	put                   map[string]string
}

func (s *putStore) Put(ctx context.Context, p string, data []byte) error {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-time.After(2 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.fail[p] {
		return errors.New("injected upload failure")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put[p] = string(data)
	return nil
}

// writeFiles does what encode.Flush does with n files: open, write, close.
func writeFiles(u *uploads, n int) error {
	for i := range n {
		w, err := u.open(&encode.Target{Path: fmt.Sprintf("f%02d", i)})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "data of f%02d", i)
		if err := w.(io.Closer).Close(); err != nil {
			return err
		}
	}
	return nil
}

func TestUploadsAreBoundedAndComplete(t *testing.T) {
	s := &putStore{put: map[string]string{}}
	u := newUploads(context.Background(), s)
	if err := writeFiles(u, 3*maxUploads); err != nil {
		t.Fatal(err)
	}
	started, err := u.wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(started) != 3*maxUploads || len(s.put) != 3*maxUploads {
		t.Fatalf("started %d, stored %d, want %d", len(started), len(s.put), 3*maxUploads)
	}
	for p, data := range s.put {
		if data != "data of "+p {
			t.Errorf("%s holds %q", p, data)
		}
	}
	if m := s.maxInFlight.Load(); m > maxUploads || m < 2 {
		t.Errorf("%d uploads in flight at most, want 2..%d", m, maxUploads)
	}
}

// The first failure stops the batch: the encoder's next file is refused,
// and every file whose upload began is reported for discarding.
func TestUploadFailureStopsTheBatch(t *testing.T) {
	s := &putStore{put: map[string]string{}, fail: map[string]bool{"f01": true}}
	u := newUploads(context.Background(), s)
	werr := writeFiles(u, 100)
	started, err := u.wait()
	if err == nil || werr == nil {
		t.Fatalf("wait: %v; writing the files: %v", err, werr)
	}
	if len(started) == 100 {
		t.Errorf("all 100 files started uploading after the failure")
	}
	for p := range s.put {
		if !slices.Contains(started, p) {
			t.Errorf("%s was stored but is not reported for discarding", p)
		}
	}
	if !slices.Contains(started, "f01") {
		t.Errorf("the failed file is not reported: %v", started)
	}
}
