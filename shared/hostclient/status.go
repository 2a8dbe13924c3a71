package hostclient

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/picomq/heavy-sinks/shared/abi"
)

// Status is a result code: a picomq_status from include/picomq_sink.h, or
// one of the host's own negative codes.
type Status int32

// The header's result codes, from shared/abi (which shared/sdk/cabi checks
// against the header), so the host side keeps no copy of its own.
const (
	StatusOK             = Status(abi.StatusOK)
	StatusRetry          = Status(abi.StatusRetry)
	StatusFatal          = Status(abi.StatusFatal)
	StatusBadConfig      = Status(abi.StatusBadConfig)
	StatusABIMismatch    = Status(abi.StatusABIMismatch)
	StatusBufferTooSmall = Status(abi.StatusBufferTooSmall)
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

func (s Status) String() string {
	switch s {
	case StatusHostError:
		return "HOST_ERROR"
	case StatusContract:
		return "CONTRACT"
	}
	return abi.Status(s).String() // the header's names; Status(n) for others
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
	// Reason is set when the client ended the process itself: Kill, an exit
	// timeout, a protocol error.
	Reason string
	// Stderr is the start and the end of what the host wrote to stderr.
	Stderr string
	// ProcessState is the process's state; nil if waiting for it failed.
	ProcessState *os.ProcessState
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString("hostclient: picomq host exited: ")
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

// clean reports an exit with status 0 that the client did not force.
func (e *ExitError) clean() bool {
	return e.Reason == "" && e.ProcessState != nil && e.ProcessState.Success()
}

// ErrClosed is returned by calls made after Host.Close began.
var ErrClosed = errors.New("hostclient: host closed")
