package hostdriver

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Status is a result code: a picomq_status from include/picomq_sink.h, or
// one of the host's own negative codes.
type Status int32

// The header's result codes.
const (
	StatusOK             Status = 0
	StatusRetry          Status = 1
	StatusFatal          Status = 2
	StatusBadConfig      Status = 3
	StatusABIMismatch    Status = 4
	StatusBufferTooSmall Status = 5
)

// The host's own codes, never returned by a plugin.
const (
	// StatusHostError: the host refused or could not do the request
	// (dlopen failed, unknown library or worker, malformed request).
	StatusHostError Status = -1
	// StatusContract: the plugin broke the header's contract; the message
	// says how and what the plugin returned.
	StatusContract Status = -2
)

var statusNames = map[Status]string{
	StatusOK:             "OK",
	StatusRetry:          "RETRY",
	StatusFatal:          "FATAL",
	StatusBadConfig:      "BAD_CONFIG",
	StatusABIMismatch:    "ABI_MISMATCH",
	StatusBufferTooSmall: "BUFFER_TOO_SMALL",
	StatusHostError:      "HOST_ERROR",
	StatusContract:       "CONTRACT",
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Status(%d)", int32(s))
}

// StatusError is a call that returned a status other than StatusOK.
type StatusError struct {
	Op      string // "load", "describe", "open", "consume", "metrics", "close", "setenv"
	Code    Status
	Message string // the plugin's error text, or the host's
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %s", e.Op, e.Code)
	}
	return fmt.Sprintf("%s: %s: %s", e.Op, e.Code, e.Message)
}

// CodeOf returns StatusOK for nil, the code of a *StatusError in err's
// chain, and StatusHostError for any other error (a dead host, a cancelled
// context).
func CodeOf(err error) Status {
	if err == nil {
		return StatusOK
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return StatusHostError
}

// ExitError is returned by every call pending or made after the host
// process ended, and by Close when the host did not exit cleanly.
type ExitError struct {
	// State is how the process ended: "exit status 3", "signal: aborted
	// (core dumped)".
	State string
	// Reason is set when the driver ended the process itself: Kill, an exit
	// timeout, a protocol error.
	Reason string
	// Stderr is the start and the end of what the host wrote to stderr.
	Stderr string
	// ProcessState is the process's state; nil if waiting for it failed.
	ProcessState *os.ProcessState
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString("hostdriver: picomq host exited: ")
	b.WriteString(e.State)
	if e.Reason != "" {
		b.WriteString(" (" + e.Reason + ")")
	}
	if s := strings.TrimRight(e.Stderr, "\n"); s != "" {
		b.WriteString("; stderr:\n")
		b.WriteString(s)
	}
	return b.String()
}

// clean reports an exit with status 0 that the driver did not force.
func (e *ExitError) clean() bool {
	return e.Reason == "" && e.ProcessState != nil && e.ProcessState.Success()
}

// ErrClosed is returned by calls made after Host.Close began.
var ErrClosed = errors.New("hostdriver: host closed")
