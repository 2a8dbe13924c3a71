package hostclient_test

import (
	"context"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// The request pipe holds a whole 1000-record batch frame, so one write
// hands it over.
func TestRequestPipeIsGrown(t *testing.T) {
	h, err := hostclient.Start(context.Background(), hosttest.BuildHost(t))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	n, err := unix.FcntlInt(hostclient.RequestPipe(h).Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil || n != hostclient.RequestPipeSize {
		t.Fatalf("request pipe size %d (%v), want %d", n, err, hostclient.RequestPipeSize)
	}
}
