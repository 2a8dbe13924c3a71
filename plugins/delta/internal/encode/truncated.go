package encode

import "strings"

// Timestamps with more digits than the microsecond (Java producers send
// nanoseconds) are written truncated to microseconds, Delta's precision,
// and never refused. The encoder counts those that lost a non-zero digit,
// per column, so the caller can count and report them (Truncated).

// TruncatedTimestamps is a column of the buffered records whose timestamp
// values lost digits beyond the microsecond.
type TruncatedTimestamps struct {
	Column      string // the column's Parquet path, "." between levels: "ts", "events.list.element.at"
	Count       int    // values truncated
	FirstOffset uint64 // offset of the first record that had one
}

type truncatedColumn struct {
	col int // index into cols
	TruncatedTimestamps
}

// keepCuts folds the truncated timestamps of the record Add just buffered
// into the batch's list; a record that failed left nothing behind.
func (e *Encoder) keepCuts(offset uint64) {
next:
	for _, col := range e.dec.cuts {
		for i := range e.truncated {
			if t := &e.truncated[i]; t.col == col {
				t.Count++
				continue next
			}
		}
		e.truncated = append(e.truncated, truncatedColumn{col: col,
			TruncatedTimestamps: TruncatedTimestamps{Column: e.columnName(col), Count: 1, FirstOffset: offset}})
	}
}

// Truncated returns the columns of the records buffered since the last
// Flush or Reset whose timestamps were truncated to microseconds, in the
// order first seen.
func (e *Encoder) Truncated() []TruncatedTimestamps {
	if len(e.truncated) == 0 {
		return nil
	}
	out := make([]TruncatedTimestamps, len(e.truncated))
	for i, t := range e.truncated {
		out[i] = t.TruncatedTimestamps
	}
	return out
}

// columnName names column col by its Parquet path; a partition column
// (not in the file) by its name.
func (e *Encoder) columnName(col int) string {
	if col >= len(e.leaves) {
		return e.partNodes[col-len(e.leaves)].name
	}
	return strings.Join(e.leaves[col].path, ".")
}
