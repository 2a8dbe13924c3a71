package hostdriver

import (
	"context"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The request pipe holds a whole 1000-record batch frame, so one write
// hands it over.
func TestRequestPipeIsGrown(t *testing.T) {
	h, err := Start(context.Background(), BuildHost(t))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	n, err := unix.FcntlInt(h.stdin.(*os.File).Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil || n != requestPipeSize {
		t.Fatalf("request pipe size %d (%v), want %d", n, err, requestPipeSize)
	}
}
