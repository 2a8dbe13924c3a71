package redshift

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsparquet"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/changes"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// readChanges reads every record of b as a change (write_mode = upsert)
// and fills recs[i]: the change, the row as payload (nil for a delete) and
// the text of each key column. A record that is not a change is rejected
// alone when the host accepts that, else the batch fails FATAL naming it:
// retrying cannot make it one. A rejected record keeps an empty change and
// is left out by the caller.
func (s *Sink) readChanges(b *sdk.Batch, recs []rsparquet.Record) error {
	if len(b.Topic) > rsql.VarcharDefault {
		// pico_change_topic, which the offsets follow, is a VARCHAR(256).
		return sdk.Fatalf("topic %.64q… is %d bytes: %s = %q records the topic of each change in a VARCHAR(%d)",
			b.Topic, len(b.Topic), keyWriteMode, writeUpsert, rsql.VarcharDefault)
	}
	for i := range recs {
		r := &recs[i]
		ch, err := s.parsed.changes.Parse(r.Payload, r.Key)
		if err == nil {
			r.KeyValues = make([][]byte, len(ch.Key))
			for k, v := range ch.Key {
				if r.KeyValues[k], err = keyText(v); err != nil {
					err = &changes.Error{Reason: fmt.Sprintf("key column %q %v", s.parsed.changes.KeyColumns[k], err)}
					break
				}
			}
		}
		if err != nil {
			rerr := fmt.Errorf("record at topic %q offset %d is not a change the Redshift sink can apply (%s = %q): %w",
				b.Topic, r.Offset, keyWriteMode, writeUpsert, err)
			if !b.Reject(i, sdk.RejectValue, rerr) {
				return sdk.Fatal(rerr)
			}
			r.KeyValues, r.Payload = nil, nil
			continue
		}
		r.Payload = ch.Row
		r.Change = rsql.OpUpsert
		if ch.Op == changes.Delete {
			r.Change = rsql.OpDelete
		}
	}
	return nil
}

// keyText is the text a key column stores for a key's JSON value: a
// string's text (refused when it ends in a blank), an integer's decimal
// digits (1, 1.0 and 1e0 alike), true or false. Other numbers are refused:
// a fraction's text has no one spelling a reader would match.
func keyText(v []byte) ([]byte, error) {
	switch c := v[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("is not a JSON string: %v", err)
		}
		if strings.HasSuffix(s, " ") {
			// Redshift compares VARCHARs without their trailing blanks,
			// so "a " would match the row of "a": another key's row.
			return nil, fmt.Errorf("is %s, which ends in a blank: Redshift ignores trailing blanks when it compares VARCHARs, so it would be the same key as without them", truncated(v))
		}
		return []byte(s), nil
	case c == 't' || c == 'f':
		return v, nil
	}
	notInt := fmt.Errorf("is %s: a number key must be an integer (stored as its digits in the VARCHAR key column)", truncated(v))
	switch digits, ok := intDigits(v); {
	case !ok:
		return nil, notInt
	case digits > rsql.VarcharMax:
		// Checked before any arithmetic: big.Rat would spend ~100 ms
		// and 1 MB on 1e999999 only for the pre-flight to refuse it.
		return nil, fmt.Errorf("is %s: an integer key has at most %d digits (the VARCHAR(MAX) key column), and its exponent makes it longer", truncated(v), rsql.VarcharMax)
	}
	r, ok := new(big.Rat).SetString(string(v))
	if !ok || !r.IsInt() {
		return nil, notInt
	}
	return []byte(r.Num().String()), nil
}

// intDigits bounds the digits of the integer part of JSON number v, from
// its spelling alone: the significant digits before the point plus the
// exponent (math.MaxInt for an exponent beyond int64). 0 when the number
// is 0; ok false when it is not 0 but below 1 in magnitude, so no integer,
// or when v is no JSON number.
func intDigits(v []byte) (digits int, ok bool) {
	mant, exp, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(string(v), "-")), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	e := int64(0)
	if exp != "" {
		var err error
		if e, err = strconv.ParseInt(exp, 10, 64); err != nil {
			if ne, isNum := err.(*strconv.NumError); !isNum || ne.Err != strconv.ErrRange {
				return 0, false
			}
			if strings.HasPrefix(exp, "-") {
				e = math.MinInt64
			} else {
				e = math.MaxInt64
			}
		}
	}
	// The significant digits start at the first non-zero one; point is
	// how many of them precede the point.
	all := whole + frac
	lead := len(all) - len(strings.TrimLeft(all, "0"))
	if lead == len(all) {
		return 0, true
	}
	point := int64(len(whole) - lead)
	switch {
	case e > 0 && point > math.MaxInt64-e:
		return math.MaxInt, true
	case e < 0 && point < math.MinInt64-e:
		return 0, false
	}
	if n := point + e; n >= 1 {
		return int(min(n, math.MaxInt)), true
	}
	return 0, false
}

func truncated(v []byte) string {
	if len(v) > 64 {
		return string(v[:64]) + "…"
	}
	return string(v)
}
