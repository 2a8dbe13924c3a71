package decode

import (
	"context"
	"errors"
	"fmt"
)

// Codec decodes payloads written with one schema.
type Codec interface {
	// AppendJSON appends the JSON of one payload to dst and returns the
	// extended slice. Every error it returns is the payload's problem: a
	// Codec does no I/O.
	AppendJSON(dst, payload []byte) ([]byte, error)
}

// Decoder decodes the payloads of one [[topics]] block. It is safe for
// concurrent use (batches of several partitions decode at once).
type Decoder interface {
	// AppendJSON appends the JSON of payload, a record of topic, to dst. An
	// error that is a *RecordError is the record's; any other error is
	// transient (see the package comment).
	AppendJSON(ctx context.Context, topic string, dst, payload []byte) ([]byte, error)
}

// RecordError is a payload that cannot be decoded: retrying cannot help.
type RecordError struct {
	Err error
}

func (e *RecordError) Error() string { return e.Err.Error() }
func (e *RecordError) Unwrap() error { return e.Err }

// Recordf returns a *RecordError with a formatted message.
func Recordf(format string, args ...any) error {
	return &RecordError{Err: fmt.Errorf(format, args...)}
}

// IsRecordError reports whether err is the record's problem.
func IsRecordError(err error) bool {
	var re *RecordError
	return errors.As(err, &re)
}

// Static decodes every payload with one Codec: a schema given in the
// definition (avro_schema_json, a descriptor set file, a .bfbs file).
type Static struct {
	Codec Codec
}

// AppendJSON implements Decoder. Every error is a *RecordError.
func (s Static) AppendJSON(_ context.Context, _ string, dst, payload []byte) ([]byte, error) {
	out, err := s.Codec.AppendJSON(dst, payload)
	if err != nil && !IsRecordError(err) {
		err = &RecordError{Err: err}
	}
	return out, err
}
