package sdk

import (
	"errors"
	"fmt"

	"github.com/picomq/heavy-sinks/shared/abi"
)

// Status is an ABI result code, abi.Status.
type Status = abi.Status

// Result codes, as in picomq_sink.h.
const (
	StatusOK             = abi.StatusOK
	StatusRetry          = abi.StatusRetry
	StatusFatal          = abi.StatusFatal
	StatusBadConfig      = abi.StatusBadConfig
	StatusABIMismatch    = abi.StatusABIMismatch
	StatusBufferTooSmall = abi.StatusBufferTooSmall
)

// Error carries the ABI result a failure should produce.
type Error struct {
	Status Status
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Retry marks err as "the write did not happen; trying the same batch again
// may succeed". Unmarked errors are treated the same way.
func Retry(err error) error { return mark(StatusRetry, err) }

// Fatal marks err as "the write did not happen and retrying this batch cannot
// succeed", e.g. a record that cannot fit the table.
func Fatal(err error) error { return mark(StatusFatal, err) }

// BadConfig marks err as a configuration error found by Open.
func BadConfig(err error) error { return mark(StatusBadConfig, err) }

// Retryf, Fatalf and BadConfigf are fmt.Errorf followed by the marker.
func Retryf(format string, a ...any) error { return Retry(fmt.Errorf(format, a...)) }

// Fatalf is fmt.Errorf followed by Fatal.
func Fatalf(format string, a ...any) error { return Fatal(fmt.Errorf(format, a...)) }

// BadConfigf is fmt.Errorf followed by BadConfig.
func BadConfigf(format string, a ...any) error { return BadConfig(fmt.Errorf(format, a...)) }

func mark(s Status, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Status: s, Err: err}
}

// StatusOf is the one place an error becomes an ABI result. A recovered
// panic is FATAL wherever it sits in the chain (the state it left behind is
// unknown); otherwise the outermost marker wins, so a caller can re-classify
// a wrapped error. Errors without a marker map to RETRY: when in doubt the
// runtime keeps the offset and tries again, which never loses data.
func StatusOf(err error) Status {
	if err == nil {
		return StatusOK
	}
	var p *PanicError
	if errors.As(err, &p) {
		return StatusFatal
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return StatusRetry
}
