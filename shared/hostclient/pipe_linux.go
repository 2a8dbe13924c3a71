package hostclient

import (
	"os"
	"syscall"
)

// requestPipeSize is the capacity asked for the pipe that carries requests
// to the host: a 1000-record batch frame is about 400 KB, and with Linux's
// default 64 KiB each one took several writes, each waiting for the host
// to drain the pipe. 1 MiB is the default pipe-max-size an unprivileged
// process may ask for.
const requestPipeSize = 1 << 20

// fSetPipeSize is F_SETPIPE_SZ (F_LINUX_SPECIFIC_BASE + 7, the same on every
// Linux architecture), which package syscall does not name: spelled out
// here so that the client imports only the standard library.
const fSetPipeSize = 1031

// growPipe asks for a larger pipe buffer, best effort: a smaller pipe only
// costs more writes.
func growPipe(f *os.File) {
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fSetPipeSize, requestPipeSize)
}
