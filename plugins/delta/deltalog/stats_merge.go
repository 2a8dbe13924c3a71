package deltalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Statistics of a file made of other files (compaction): the add.stats of
// the files it was made of, combined, instead of a pass over every value.
// numRecords and every nullCount add up; the minimum is the least of the
// minimums and the maximum the greatest of the maximums, each a bound of
// its file (a cut string, a timestamp cut to milliseconds) and so a bound
// of the whole. A column one file has values for but no bound for (NaN,
// a string with no upper bound) gets no bound at all.

// ErrStatsIncomplete is returned by ObserveStats for stats that lack
// numRecords or the nullCount of an indexed column: the combined file's
// statistics cannot be derived from them.
var ErrStatsIncomplete = errors.New("deltalog: stats incomplete")

// ObserveStats folds one file's add.stats JSON into the collector, as if
// its rows had been observed.
func (c *StatsCollector) ObserveStats(stats string) error {
	var s struct {
		NumRecords *int64                     `json:"numRecords"`
		Min        map[string]json.RawMessage `json:"minValues"`
		Max        map[string]json.RawMessage `json:"maxValues"`
		Nulls      map[string]json.RawMessage `json:"nullCount"`
	}
	dec := json.NewDecoder(strings.NewReader(stats))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("%w: %v", ErrStatsIncomplete, err)
	}
	if s.NumRecords == nil {
		return fmt.Errorf("%w: no numRecords", ErrStatsIncomplete)
	}
	for _, col := range c.cols {
		var nulls int64
		if err := json.Unmarshal(statsLeaf(s.Nulls, col.Path), &nulls); err != nil {
			return fmt.Errorf("%w: no nullCount for %s", ErrStatsIncomplete, strings.Join(col.Path, "."))
		}
		col.nulls += nulls
		if !col.minMax || nulls >= *s.NumRecords {
			continue
		}
		lo, hi := statsLeaf(s.Min, col.Path), statsLeaf(s.Max, col.Path)
		if lo == nil || hi == nil {
			col.unbounded = true
			continue
		}
		for _, raw := range [][]byte{lo, hi} {
			if err := col.observeBound(raw); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrStatsIncomplete, strings.Join(col.Path, "."), err)
			}
		}
	}
	c.numRecords += *s.NumRecords
	return nil
}

// statsLeaf finds the value at path in a stats section (nested objects for
// struct fields); nil when absent or null.
func statsLeaf(section map[string]json.RawMessage, path []string) json.RawMessage {
	for i, name := range path {
		raw, ok := section[name]
		if !ok || bytes.Equal(raw, []byte("null")) {
			return nil
		}
		if i == len(path)-1 {
			return raw
		}
		section = nil
		if json.Unmarshal(raw, &section) != nil {
			return nil
		}
	}
	return nil
}

// observeBound observes one minimum or maximum as stats JSON renders it.
func (s *ColumnStats) observeBound(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if t, ok := s.Type.(PrimitiveType); ok && (t == TypeTimestamp || t == TypeTimestampNTZ) {
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("timestamp bound %s is not a string", raw)
		}
		tm, err := parseStatsTime(str)
		if err != nil {
			return err
		}
		v = tm
	}
	if f, ok := v.(json.Number); ok && (s.Type == TypeFloat || s.Type == TypeDouble) {
		x, err := f.Float64()
		if err != nil {
			return err
		}
		v = x
	}
	return s.Observe(v)
}

// parseStatsTime reads a timestamp bound: Spark's and our
// "2006-01-02T15:04:05.000Z", "…+01:00" offsets, or no zone (timestamp_ntz).
func parseStatsTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if tm, err := time.Parse(layout, s); err == nil {
			return tm, nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp bound %q", s)
}
