package encode_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

type closingBuffer struct {
	bytes.Buffer
	closed int
}

func (c *closingBuffer) Close() error { c.closed++; return nil }

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestFlushContract(t *testing.T) {
	schema := mustSchema(t, field("p", `"string"`, true), field("v", `"long"`, true))
	enc := mustEncoder(t, schema, []string{"p"}, encode.Options{})
	add := func() {
		t.Helper()
		for i, r := range []string{`{"p":"a","v":1}`, `{"p":"b","v":2}`} {
			if err := enc.Add([]byte(r), uint64(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	add()
	if enc.Len() != 2 || enc.BufferedBytes() == 0 {
		t.Fatalf("Len %d BufferedBytes %d", enc.Len(), enc.BufferedBytes())
	}

	// An open error fails Flush and keeps the records.
	_, err := enc.Flush(func(*encode.Target) (io.Writer, error) { return nil, errors.New("no bucket") })
	if err == nil || err.Error() != "no bucket" || enc.Len() != 2 {
		t.Fatalf("Flush: %v, Len %d", err, enc.Len())
	}
	// So does a write error.
	if _, err := enc.Flush(func(*encode.Target) (io.Writer, error) { return failingWriter{}, nil }); err == nil || enc.Len() != 2 {
		t.Fatalf("Flush to a failing writer: %v, Len %d", err, enc.Len())
	}

	// A retried Flush writes everything; io.Closers are closed once done.
	var bufs []*closingBuffer
	files, err := enc.Flush(func(*encode.Target) (io.Writer, error) {
		b := &closingBuffer{}
		bufs = append(bufs, b)
		return b, nil
	})
	if err != nil || len(files) != 2 {
		t.Fatalf("Flush: %v, %d files", err, len(files))
	}
	for i, b := range bufs {
		if b.closed != 1 || int64(b.Len()) != files[i].Size {
			t.Errorf("file %d: closed %d times, %d bytes, Size %d", i, b.closed, b.Len(), files[i].Size)
		}
	}
	if enc.Len() != 0 || enc.BufferedBytes() != 0 {
		t.Fatalf("after Flush: Len %d BufferedBytes %d", enc.Len(), enc.BufferedBytes())
	}

	// Reset discards; the next batch numbers records from 0 again.
	add()
	enc.Reset()
	if enc.Len() != 0 {
		t.Fatalf("Len %d after Reset", enc.Len())
	}
	err = enc.Add([]byte(`{"v":"x"}`), 42)
	var re *encode.RecordError
	if !errors.As(err, &re) || re.Index != 0 || re.Offset != 42 || re.Kind != encode.ErrTypeMismatch {
		t.Fatalf("error after Reset: %#v", err)
	}
}

// Buffers are reused: a steady stream of batches allocates (almost) only
// what parquet-go and the stats JSON need per file, not per record.
func TestAddDoesNotAllocate(t *testing.T) {
	schema := mustSchema(t, field("s", `"string"`, true), field("n", `"long"`, true),
		field("t", `"timestamp"`, true), field("o", structType(field("x", `"double"`, true)), true),
		field("a", arrayType(`"string"`, true), true), field("p", `"string"`, true))
	enc := mustEncoder(t, schema, []string{"p"}, encode.Options{})
	rec := []byte(`{"s":"hello","n":12345,"t":"2026-09-03T21:15:04.123Z","o":{"x":1.5},"a":["x","y"],"p":"eu","extra":{"k":[1,2]}}`)
	for range 2000 {
		if err := enc.Add(rec, 0); err != nil {
			t.Fatal(err)
		}
	}
	enc.Reset()
	allocs := testing.AllocsPerRun(1000, func() {
		if err := enc.Add(rec, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0.05 {
		t.Fatalf("Add allocates %.2f times per record", allocs)
	}
}

func TestMatched(t *testing.T) {
	schema := mustSchema(t, field("id", `"long"`, true), field("s", structType(field("x", `"long"`, true)), true),
		field("p", `"string"`, true))
	enc := mustEncoder(t, schema, []string{"p"}, encode.Options{})
	for _, tc := range []struct {
		record  string
		matched bool
	}{
		{`{"id":1}`, true},
		{`{"ID":1}`, false},                 // names match case-sensitively
		{`{}`, false},                       // nothing to match
		{`{"x":1,"other":{"id":1}}`, false}, // a nested key naming a top-level column is not a match
		{`{"s":{"X":1}}`, true},             // the struct matched, whatever is inside
		{`{"p":"eu"}`, true},                // partition columns count
		{`{"a":1,"id":null}`, true},         // null is a value for the column
	} {
		if err := enc.Add([]byte(tc.record), 0); err != nil {
			t.Fatalf("Add(%s): %v", tc.record, err)
		}
		if got := enc.Matched(); got != tc.matched {
			t.Errorf("Add(%s): Matched() = %v, want %v", tc.record, got, tc.matched)
		}
	}
}

func TestRecordErrorNamesTopic(t *testing.T) {
	e := &encode.RecordError{Topic: "orders", Index: 3, Offset: 1042, Field: "amount", Kind: encode.ErrInexact,
		Detail: `value "1.2345" has more than 3 fractional digits and would be rounded to fit decimal(12,3)`}
	want := `Invalid record value: field "amount": value "1.2345" has more than 3 fractional digits and would be rounded to fit decimal(12,3) (topic "orders", record 3, offset 1042)`
	if e.Error() != want || !errors.Is(e, encode.ErrInvalidRecord) {
		t.Fatalf("got %q", e.Error())
	}
	e.Kind, e.Field, e.Detail = encode.ErrInvalidJSON, "", "empty payload at byte 0"
	if want := `Invalid JSON record: empty payload at byte 0 (topic "orders", record 3, offset 1042)`; e.Error() != want {
		t.Fatalf("got %q", e.Error())
	}
}
