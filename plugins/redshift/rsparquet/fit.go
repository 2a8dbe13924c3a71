package rsparquet

import (
	"errors"
	"fmt"

	"github.com/picomq/heavy-sinks/plugins/redshift/internal/rsjson"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// RecordError says a record can never be loaded: a value is longer than its
// column holds, or a text payload is not text Redshift can store. Retrying
// the batch cannot help.
type RecordError struct {
	Topic  string
	Offset uint64
	Column string
	Size   int // bytes the value needs; 0 for a text problem
	Limit  int // bytes the column holds; 0 for a text problem
	Reason string
	// Value marks a value the column cannot represent, though it is well
	// formed and not too long (a SUPER payload nested too deep).
	Value bool
	// LongString marks a SUPER payload with a string longer than a SUPER
	// value holds: a size failure, told with a Reason.
	LongString bool
}

func (e *RecordError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("record at topic %q offset %d cannot be loaded into Redshift: column %s %s",
			e.Topic, e.Offset, e.Column, e.Reason)
	}
	return fmt.Sprintf("record at topic %q offset %d cannot be loaded into Redshift: column %s needs %d bytes but holds at most %d "+
		"(Redshift measures VARCHAR and VARBYTE in bytes)", e.Topic, e.Offset, e.Column, e.Size, e.Limit)
}

// Check measures every value of c against the limits (by layout position,
// see rsql.Limits) before anything is encoded or uploaded, and returns a
// *RecordError for the first record that cannot fit. It also rejects text
// payloads, and topics, that are not valid UTF-8 or contain NUL, and SUPER
// payloads Redshift's JSON_PARSE would refuse (rsjson.Check). c.CreatedAt only needs
// the length of the value Encode will write.
//
// Redshift would otherwise fail the COPY with an opaque load error, or, for
// some settings, truncate; either way the batch could never succeed.
func Check(l *rsql.Layout, lim rsql.Limits, c Chunk) error {
	var first error
	err := CheckEach(l, lim, c, func(_ int, e *RecordError) {
		if first == nil {
			first = e
		}
	})
	if err != nil {
		return err
	}
	return first
}

// TooLong reports whether the record failed a byte limit (rather than
// holding text Redshift cannot store).
func (e *RecordError) TooLong() bool { return e.Reason == "" || e.LongString }

// CheckEach is Check reporting every record that cannot be loaded: bad is
// called once per such record, with its index in c.Records, in order. The
// error it returns is for what fails every record alike (the topic name,
// the created_at value), which no single record can be blamed for.
func CheckEach(l *rsql.Layout, lim rsql.Limits, c Chunk, bad func(i int, e *RecordError)) error {
	if len(c.Records) == 0 {
		return nil
	}
	// Values that are the same in every row fail at the first record. The
	// topic is part of id, a VARCHAR in every layout, so a topic that is not
	// text would fail every COPY with an opaque load error.
	if ok, why := validText([]byte(c.Topic)); !ok {
		return &RecordError{Topic: c.Topic, Offset: c.Records[0].Offset, Column: l.Columns[l.Position(rsql.ID)].Name,
			Reason: "would hold the topic name, which " + why + " (id is a VARCHAR)"}
	}
	for col, spec := range l.Columns {
		limit := lim[col]
		switch {
		case limit <= 0:
		case spec.ID == rsql.Topic && len(c.Topic) > limit:
			return tooLong(c, 0, spec, len(c.Topic), limit)
		case spec.ID == rsql.CreatedAt && len(c.CreatedAt) > limit:
			return tooLong(c, 0, spec, len(c.CreatedAt), limit)
		}
	}
	partDigits := digits(uint64(c.Partition))
	textPayload, superPayload := false, false
	if p := l.Position(rsql.Payload); p >= 0 {
		textPayload = l.Columns[p].Family == rsql.FamilyVarchar
		superPayload = l.Columns[p].Family == rsql.FamilySuper
	}
records:
	for i := range c.Records {
		r := &c.Records[i]
		for col, spec := range l.Columns {
			limit := lim[col]
			var n int
			switch spec.ID {
			case rsql.ID:
				n = len(c.Topic) + 2 + partDigits + digits(r.Offset)
			case rsql.Offset:
				n = digits(r.Offset)
			case rsql.Timestamp:
				n = digitsInt(r.Timestamp)
			case rsql.Key:
				n = metadata.KeyBase64Len(len(r.Key))
			case rsql.KeyColumn:
				if spec.KeyIndex >= len(r.KeyValues) {
					bad(i, &RecordError{Topic: c.Topic, Offset: r.Offset, Column: spec.Name, Reason: "has no value (key_columns)", Value: true})
					continue records
				}
				v := r.KeyValues[spec.KeyIndex]
				if ok, why := validText(v); !ok {
					bad(i, &RecordError{Topic: c.Topic, Offset: r.Offset, Column: spec.Name,
						Reason: "would hold the key value, which " + why + " (key columns are VARCHAR)"})
					continue records
				}
				n = len(v)
			case rsql.Payload:
				if r.Change == rsql.OpDelete {
					continue // staged as NULL
				}
				n = len(r.Payload)
				if textPayload {
					if ok, why := validText(r.Payload); !ok {
						bad(i, &RecordError{Topic: c.Topic, Offset: r.Offset, Column: spec.Name,
							Reason: why + " (payload_format = \"text\" stores the payload as VARCHAR)"})
						continue records
					}
				}
				// The length first: a payload too long for the staging
				// column is refused as such, without parsing 16 MiB.
				if superPayload && (limit <= 0 || n <= limit) {
					if err := rsjson.Check(r.Payload); err != nil {
						bad(i, superError(c, i, spec, err))
						continue records
					}
				}
			default:
				continue
			}
			if limit > 0 && n > limit {
				bad(i, tooLong(c, i, spec, n, limit))
				continue records
			}
		}
	}
	return nil
}

// superError is the RecordError of a payload JSON_PARSE would refuse.
func superError(c Chunk, i int, col rsql.Column, err error) *RecordError {
	e := &RecordError{Topic: c.Topic, Offset: c.Records[i].Offset, Column: col.Name,
		Reason: err.Error() + " (payload_format = \"super\" loads the payload with Redshift's JSON_PARSE)"}
	var je *rsjson.Error
	if errors.As(err, &je) {
		switch je.Kind {
		case rsjson.StringLength:
			e.LongString = true
		case rsjson.Depth, rsjson.Number:
			e.Value = true
		}
	}
	return e
}

func tooLong(c Chunk, i int, col rsql.Column, size, limit int) *RecordError {
	return &RecordError{Topic: c.Topic, Offset: c.Records[i].Offset, Column: col.Name, Size: size, Limit: limit}
}

// digitsInt is len(strconv.FormatInt(v, 10)) without the allocation.
func digitsInt(v int64) int {
	if v < 0 {
		return 1 + digits(uint64(-(v+1))+1)
	}
	return digits(uint64(v))
}

// digits is len(strconv.FormatUint(v, 10)) without the allocation.
func digits(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}
