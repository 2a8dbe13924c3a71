package hostdriver

import (
	"os"

	"golang.org/x/sys/unix"
)

// requestPipeSize is the capacity asked for the pipe that carries requests
// to the host: a 1000-record batch frame is about 400 KB, and with Linux's
// default 64 KiB each one took several writes, each waiting for the host
// to drain the pipe. 1 MiB is the default pipe-max-size an unprivileged
// process may ask for.
const requestPipeSize = 1 << 20

// growPipe asks for a larger pipe buffer, best effort: a smaller pipe only
// costs more writes.
func growPipe(f *os.File) {
	_, _ = unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, requestPipeSize)
}
