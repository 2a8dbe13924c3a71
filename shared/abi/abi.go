package abi

import "fmt"

// The ABI version: PICOMQ_SINK_ABI_MAJOR and PICOMQ_SINK_ABI_MINOR.
const (
	Major = 1
	Minor = 5
)

// Status is a picomq_status, the result code of every ABI call.
type Status int32

// Result codes, PICOMQ_OK and the rest.
const (
	StatusOK             Status = 0
	StatusRetry          Status = 1
	StatusFatal          Status = 2
	StatusBadConfig      Status = 3
	StatusABIMismatch    Status = 4
	StatusBufferTooSmall Status = 5
)

// String is the header's name without its PICOMQ_ prefix, or "Status(N)".
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "OK"
	case StatusRetry:
		return "RETRY"
	case StatusFatal:
		return "FATAL"
	case StatusBadConfig:
		return "BAD_CONFIG"
	case StatusABIMismatch:
		return "ABI_MISMATCH"
	case StatusBufferTooSmall:
		return "BUFFER_TOO_SMALL"
	}
	return fmt.Sprintf("Status(%d)", int32(s))
}

// RejectReason is a picomq_reject_reason: why a record was rejected
// (ABI 1.1).
type RejectReason int32

// Reasons a record can be rejected for, PICOMQ_REJECT_*. 0 is never valid.
const (
	// RejectValue: a value the destination cannot represent (a type the
	// column cannot take, out of range, a decimal that would need rounding,
	// null or absence in a non-nullable field).
	RejectValue RejectReason = 1
	// RejectSize: a value longer than the destination holds.
	RejectSize RejectReason = 2
	// RejectEncoding: a payload that is not what the schema says (not JSON,
	// not a JSON object, not valid UTF-8).
	RejectEncoding RejectReason = 3
)

// String is the reason's name as the runtime's dead-letter headers carry
// it (value, size, encoding), or "RejectReason(N)".
func (r RejectReason) String() string {
	switch r {
	case RejectValue:
		return "value"
	case RejectSize:
		return "size"
	case RejectEncoding:
		return "encoding"
	}
	return fmt.Sprintf("RejectReason(%d)", int32(r))
}
