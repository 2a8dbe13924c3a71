package hostclient

import (
	"os"

	"golang.org/x/sys/unix"
)

// RequestPipeSize is the size growPipe asks for.
const RequestPipeSize = requestPipeSize

// RequestPipe returns the host's request pipe, to check its size.
func RequestPipe(h *Host) *os.File { return h.stdin.(*os.File) }

// fSetPipeSize is x/sys/unix's F_SETPIPE_SZ: a mismatch fails the build.
var _ = [1]struct{}{}[fSetPipeSize-unix.F_SETPIPE_SZ]
