package deltalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Per-file statistics (PROTOCOL.md "Per-file Statistics"), collected the
// way Delta-Spark does so data skipping treats our files like Spark's:
//
//   - which columns: delta.dataSkippingStatsColumns if set, else the first
//     delta.dataSkippingNumIndexedCols (default 32, -1 = all) leaf columns
//     of the data schema (partition columns excluded; a struct counts its
//     leaves, an array or map counts as one);
//   - minValues/maxValues for numeric, decimal, date, timestamp,
//     timestamp_ntz and string leaves; nullCount for every indexed leaf,
//     including boolean, binary, array, map and void;
//   - timestamps truncated down to milliseconds ("…T21:15:04.123Z",
//     timestamp_ntz without the Z);
//   - strings cut to delta.dataSkippingStringPrefixLength characters
//     (default 32): the min is a plain prefix; the max is a prefix followed
//     by U+007F or U+10FFFF so it is still ≥ every value (omitted when no
//     such bound exists within twice the prefix length);
//   - a float column that saw NaN or ±Inf gets no min/max (JSON cannot hold
//     them, and a missing bound only disables skipping).
//
// Nested structs appear as nested objects, keyed by field name.

// DefaultNumIndexedCols and DefaultStringPrefixLength are Delta's defaults.
const (
	DefaultNumIndexedCols     = 32
	DefaultStringPrefixLength = 32
)

// StatsCollector accumulates statistics for one data file. Feed it per
// value through its columns (fast, typed) or per record with
// ObserveRecord; then call JSON. Not safe for concurrent use.
type StatsCollector struct {
	numRecords int64
	cols       []*ColumnStats
	root       *statsNode
	prefixLen  int
}

// statsNode mirrors the indexed part of the schema for JSON rendering and
// for ObserveRecord's walk.
type statsNode struct {
	name     string
	children []*statsNode // struct
	col      *ColumnStats // leaf
}

// ColumnStats accumulates one indexed leaf column.
type ColumnStats struct {
	Path   []string
	Type   DataType
	minMax bool // min/max are collected for this type

	nulls     int64
	seen      bool // at least one non-null value
	nonFinite bool // float column saw NaN or ±Inf
	unbounded bool // a file folded in by ObserveStats had values but no bounds
	finite    bool // float column saw a finite value

	minI, maxI int64
	minF, maxF float64
	minS, maxS string
	minB, maxB *big.Int
}

// NewStatsCollector returns a collector for files written to the table in
// s: the table's indexed columns, plus any clustering columns (the
// clustering feature requires their stats).
func NewStatsCollector(s *Snapshot) (*StatsCollector, error) {
	return NewStatsCollectorFor(s.Schema, s.PartitionColumns, s.Metadata.Configuration, clusteringColumns(s.Domains))
}

// NewStatsCollectorFor builds a collector from a schema, the partition
// columns, the table configuration and extra column paths that must be
// indexed regardless of the configuration.
func NewStatsCollectorFor(schema *StructType, partitionColumns []string, config map[string]string, extra [][]string) (*StatsCollector, error) {
	data := dataSchema(schema, partitionColumns)
	prefixLen := DefaultStringPrefixLength
	if v, ok := config["delta.dataSkippingStringPrefixLength"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("deltalog: bad delta.dataSkippingStringPrefixLength %q", v)
		}
		prefixLen = n
	}
	var selected *StructType
	if v, ok := config["delta.dataSkippingStatsColumns"]; ok && strings.TrimSpace(v) != "" {
		paths, err := ParseColumnList(v)
		if err != nil {
			return nil, fmt.Errorf("deltalog: bad delta.dataSkippingStatsColumns: %w", err)
		}
		selected = filterSchema(data, append(paths, extra...))
	} else {
		n := DefaultNumIndexedCols
		if v, ok := config["delta.dataSkippingNumIndexedCols"]; ok {
			var err error
			n, err = strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < -1 {
				return nil, fmt.Errorf("deltalog: bad delta.dataSkippingNumIndexedCols %q", v)
			}
		}
		if n < 0 {
			selected = data
		} else {
			selected, _ = truncateSchema(data, n)
		}
		if len(extra) > 0 {
			selected = mergeSchemas(data, selected, filterSchema(data, extra))
		}
	}
	c := &StatsCollector{prefixLen: prefixLen}
	c.root = c.buildNode("", nil, selected)
	return c, nil
}

func (c *StatsCollector) buildNode(name string, path []string, st *StructType) *statsNode {
	n := &statsNode{name: name}
	for _, f := range st.Fields {
		p := append(slices.Clone(path), f.Name)
		if sub, ok := f.Type.(*StructType); ok {
			if child := c.buildNode(f.Name, p, sub); len(child.children) > 0 {
				n.children = append(n.children, child)
			}
			continue
		}
		col := &ColumnStats{Path: p, Type: f.Type, minMax: minMaxEligible(f.Type)}
		c.cols = append(c.cols, col)
		n.children = append(n.children, &statsNode{name: f.Name, col: col})
	}
	return n
}

func minMaxEligible(t DataType) bool {
	switch t := t.(type) {
	case DecimalType:
		return true
	case PrimitiveType:
		switch t {
		case TypeByte, TypeShort, TypeInteger, TypeLong, TypeFloat, TypeDouble,
			TypeDate, TypeTimestamp, TypeTimestampNTZ, TypeString:
			return true
		}
	}
	return false
}

// dataSchema is the schema without partition columns: data files do not
// hold them, so neither do their stats.
func dataSchema(s *StructType, partitionColumns []string) *StructType {
	out := &StructType{}
	for _, f := range s.Fields {
		if !slices.Contains(partitionColumns, f.Name) {
			out.Fields = append(out.Fields, f)
		}
	}
	return out
}

// truncateSchema keeps the first n leaves (Spark's truncateSchema).
func truncateSchema(s *StructType, n int) (*StructType, int) {
	out := &StructType{}
	count := 0
	for _, f := range s.Fields {
		if count >= n {
			break
		}
		if st, ok := f.Type.(*StructType); ok {
			sub, k := truncateSchema(st, n-count)
			count += k
			f.Type = sub
		} else {
			count++
		}
		out.Fields = append(out.Fields, f)
	}
	return out, count
}

// filterSchema keeps the fields named by paths (case-insensitive), all
// leaves of a named struct, in schema order. Unknown names are ignored, as
// Spark does.
func filterSchema(s *StructType, paths [][]string) *StructType {
	out := &StructType{}
	for _, f := range s.Fields {
		var rest [][]string
		whole := false
		for _, p := range paths {
			if len(p) == 0 || !strings.EqualFold(p[0], f.Name) {
				continue
			}
			if len(p) == 1 {
				whole = true
			} else {
				rest = append(rest, p[1:])
			}
		}
		switch {
		case whole:
			out.Fields = append(out.Fields, f)
		case len(rest) > 0:
			if st, ok := f.Type.(*StructType); ok {
				if sub := filterSchema(st, rest); len(sub.Fields) > 0 {
					f.Type = sub
					out.Fields = append(out.Fields, f)
				}
			}
		}
	}
	return out
}

// mergeSchemas returns the fields of full present in a or b, in full's order.
func mergeSchemas(full, a, b *StructType) *StructType {
	out := &StructType{}
	for _, f := range full.Fields {
		fa, fb := a.Field(f.Name), b.Field(f.Name)
		if fa == nil && fb == nil {
			continue
		}
		if st, ok := f.Type.(*StructType); ok {
			sa, sb := &StructType{}, &StructType{}
			if fa != nil {
				sa = fa.Type.(*StructType)
			}
			if fb != nil {
				sb = fb.Type.(*StructType)
			}
			f.Type = mergeSchemas(st, sa, sb)
		}
		out.Fields = append(out.Fields, f)
	}
	return out
}

// ParseColumnList parses a comma-separated list of possibly nested column
// names as delta.dataSkippingStatsColumns holds them, for example
// "a, b.c, `we.ird`.x". Backticks quote a name part (so it may hold dots
// or commas); inside backticks, two backticks stand for one.
func ParseColumnList(s string) ([][]string, error) {
	var out [][]string
	var cur []string
	var part strings.Builder
	quoted, partQuoted := false, false
	flushPart := func() error {
		name := part.String()
		if !partQuoted {
			name = strings.TrimSpace(name)
		}
		if name == "" && !partQuoted {
			return fmt.Errorf("empty column name in %q", s)
		}
		cur = append(cur, name)
		part.Reset()
		partQuoted = false
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted:
			if c == '`' {
				if i+1 < len(s) && s[i+1] == '`' {
					part.WriteByte('`')
					i++
				} else {
					quoted = false
				}
			} else {
				part.WriteByte(c)
			}
		case c == '`':
			if strings.TrimSpace(part.String()) != "" {
				return nil, fmt.Errorf("unexpected backtick in %q", s)
			}
			part.Reset()
			quoted, partQuoted = true, true
		case c == '.':
			if err := flushPart(); err != nil {
				return nil, err
			}
		case c == ',':
			if err := flushPart(); err != nil {
				return nil, err
			}
			out = append(out, cur)
			cur = nil
		default:
			if partQuoted && c != ' ' && c != '\t' {
				return nil, fmt.Errorf("unexpected %q after quoted name in %q", c, s)
			}
			if !partQuoted {
				part.WriteByte(c)
			}
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated backtick in %q", s)
	}
	if err := flushPart(); err != nil {
		return nil, err
	}
	out = append(out, cur)
	return out, nil
}

// clusteringColumns reads the delta.clustering domain. Its configuration is
// {"clusteringColumns": [...]} with each entry either a dotted name string or
// a list of name parts (Spark writes the latter).
func clusteringColumns(domains map[string]DomainMetadata) [][]string {
	dm, ok := domains["delta.clustering"]
	if !ok {
		return nil
	}
	var cfg struct {
		ClusteringColumns []json.RawMessage `json:"clusteringColumns"`
	}
	if json.Unmarshal([]byte(dm.Configuration), &cfg) != nil {
		return nil
	}
	var out [][]string
	for _, raw := range cfg.ClusteringColumns {
		var parts []string
		if json.Unmarshal(raw, &parts) == nil {
			out = append(out, parts)
			continue
		}
		var name string
		if json.Unmarshal(raw, &name) == nil {
			if p, err := ParseColumnList(name); err == nil && len(p) == 1 {
				out = append(out, p[0])
			}
		}
	}
	return out
}

// Columns returns the indexed leaf columns in schema order.
func (c *StatsCollector) Columns() []*ColumnStats { return c.cols }

// Column returns the indexed leaf at path, or nil if it is not indexed.
func (c *StatsCollector) Column(path ...string) *ColumnStats {
	for _, col := range c.cols {
		if slices.Equal(col.Path, path) {
			return col
		}
	}
	return nil
}

// AddRows counts n records. Callers feeding columns directly must call it
// (ObserveRecord counts for itself).
func (c *StatsCollector) AddRows(n int64) { c.numRecords += n }

// NumRecords is the number of records counted so far.
func (c *StatsCollector) NumRecords() int64 { return c.numRecords }

// Reset clears all accumulated values, keeping the column selection.
func (c *StatsCollector) Reset() {
	c.numRecords = 0
	for _, col := range c.cols {
		*col = ColumnStats{Path: col.Path, Type: col.Type, minMax: col.minMax}
	}
}

// ObserveRecord counts one record and feeds every indexed leaf from it. The
// record is a decoded JSON object: nested structs are map[string]any, a
// missing key or nil (at any level) is null. Values are interpreted as by
// ColumnStats.Observe.
func (c *StatsCollector) ObserveRecord(rec map[string]any) error {
	c.numRecords++
	return c.observeNode(c.root, rec)
}

func (c *StatsCollector) observeNode(n *statsNode, rec map[string]any) error {
	for _, ch := range n.children {
		var v any
		if rec != nil {
			v = rec[ch.name]
		}
		if ch.col != nil {
			if err := ch.col.Observe(v); err != nil {
				return err
			}
			continue
		}
		sub, _ := v.(map[string]any)
		if v != nil && sub == nil {
			return fmt.Errorf("deltalog: stats: column %q: want an object, got %T", ch.name, v)
		}
		if err := c.observeNode(ch, sub); err != nil {
			return err
		}
	}
	return nil
}

// ObserveNull records a null value.
func (s *ColumnStats) ObserveNull() { s.nulls++ }

// ObserveInt records a value of an integer-backed column: byte, short, integer,
// long, date (days since epoch), timestamp and timestamp_ntz (microseconds
// since epoch), and decimals with precision ≤ 18 (the unscaled value).
func (s *ColumnStats) ObserveInt(v int64) { widen(v, &s.minI, &s.maxI, &s.seen) }

// ObserveFloat records a float or double value.
func (s *ColumnStats) ObserveFloat(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		s.nonFinite = true
		return
	}
	widen(v, &s.minF, &s.maxF, &s.finite)
}

// ObserveString records a string value.
func (s *ColumnStats) ObserveString(v string) { widen(v, &s.minS, &s.maxS, &s.seen) }

// widen records v in the bounds lo..hi, which hold no value yet unless
// seen.
func widen[T int64 | float64 | string](v T, lo, hi *T, seen *bool) {
	if !*seen {
		*lo, *hi, *seen = v, v, true
		return
	}
	if v < *lo {
		*lo = v
	} else if v > *hi {
		*hi = v
	}
}

// ObserveDecimal records a decimal by its unscaled value (any precision).
func (s *ColumnStats) ObserveDecimal(unscaled *big.Int) {
	if !s.seen {
		s.minB, s.maxB, s.seen = new(big.Int).Set(unscaled), new(big.Int).Set(unscaled), true
		return
	}
	if unscaled.Cmp(s.minB) < 0 {
		s.minB.Set(unscaled)
	} else if unscaled.Cmp(s.maxB) > 0 {
		s.maxB.Set(unscaled)
	}
}

// ObserveNonNull records a non-null value of a column without min/max (boolean,
// binary, array, map). It only matters for symmetry: nullCount counts nulls.
func (s *ColumnStats) ObserveNonNull() {}

// Observe records a Go value for this column, dispatching on the column type:
// nil is null; integers accept Go ints, integral float64 and json.Number;
// float/double accept numbers; decimal accepts string, json.Number, numbers
// and *big.Rat (exactly representable at the column's scale); date accepts
// days since epoch, time.Time or "YYYY-MM-DD"; timestamp/timestamp_ntz
// accept microseconds since epoch or time.Time; string accepts string.
func (s *ColumnStats) Observe(v any) error {
	if v == nil {
		s.ObserveNull()
		return nil
	}
	if !s.minMax {
		return nil
	}
	var err error
	switch t := s.Type.(type) {
	case DecimalType:
		var r *big.Rat
		if r, err = toRat(v); err == nil {
			var u *big.Int
			if u, err = unscaledDecimal(r, t); err == nil {
				s.ObserveDecimal(u)
			}
		}
	case PrimitiveType:
		switch t {
		case TypeByte, TypeShort, TypeInteger, TypeLong:
			var n int64
			if n, err = toInt64(v); err == nil {
				s.ObserveInt(n)
			}
		case TypeFloat, TypeDouble:
			var f float64
			if f, err = toFloat64(v); err == nil {
				s.ObserveFloat(f)
			}
		case TypeDate:
			var d int64
			if d, err = toDays(v); err == nil {
				s.ObserveInt(d)
			}
		case TypeTimestamp, TypeTimestampNTZ:
			var us int64
			if us, err = toMicros(v, t == TypeTimestamp); err == nil {
				s.ObserveInt(us)
			}
		case TypeString:
			str, ok := v.(string)
			if !ok {
				err = fmt.Errorf("want a string, got %T", v)
			} else {
				s.ObserveString(str)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("deltalog: stats: column %q: %w", strings.Join(s.Path, "."), err)
	}
	return nil
}

// NullCount is the number of nulls recorded.
func (s *ColumnStats) NullCount() int64 { return s.nulls }

// JSON renders the add.stats string:
// {"numRecords":…,"minValues":{…},"maxValues":{…},"nullCount":{…}}.
func (c *StatsCollector) JSON() (string, error) {
	var b bytes.Buffer
	b.WriteString(`{"numRecords":`)
	b.WriteString(strconv.FormatInt(c.numRecords, 10))
	for _, section := range []string{"minValues", "maxValues", "nullCount"} {
		var body bytes.Buffer
		if c.writeNode(&body, c.root, section) {
			b.WriteString(`,"` + section + `":`)
			b.Write(body.Bytes())
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

// writeNode writes n's object for one section; false if it would be empty.
func (c *StatsCollector) writeNode(b *bytes.Buffer, n *statsNode, section string) bool {
	wrote := false
	for _, ch := range n.children {
		var val []byte
		if ch.col != nil {
			val = c.leafValue(ch.col, section)
			if val == nil {
				continue
			}
		} else {
			var sub bytes.Buffer
			if !c.writeNode(&sub, ch, section) {
				continue
			}
			val = sub.Bytes()
		}
		if wrote {
			b.WriteByte(',')
		} else {
			b.WriteByte('{')
		}
		wrote = true
		writeJSONString(b, ch.name)
		b.WriteByte(':')
		b.Write(val)
	}
	if wrote {
		b.WriteByte('}')
	}
	return wrote
}

func (c *StatsCollector) leafValue(s *ColumnStats, section string) []byte {
	if section == "nullCount" {
		return strconv.AppendInt(nil, s.nulls, 10)
	}
	if !s.minMax || !(s.seen || s.finite) || s.unbounded {
		return nil
	}
	isMin := section == "minValues"
	switch t := s.Type.(type) {
	case DecimalType:
		if s.minB == nil {
			return nil
		}
		v := s.maxB
		if isMin {
			v = s.minB
		}
		return []byte(formatUnscaled(v.String(), t.Scale))
	case PrimitiveType:
		pick := func() int64 {
			if isMin {
				return s.minI
			}
			return s.maxI
		}
		switch t {
		case TypeByte, TypeShort, TypeInteger, TypeLong:
			return strconv.AppendInt(nil, pick(), 10)
		case TypeFloat, TypeDouble:
			if s.nonFinite || !s.finite {
				return nil
			}
			f := s.maxF
			if isMin {
				f = s.minF
			}
			bits := 64
			if t == TypeFloat {
				bits = 32
			}
			return strconv.AppendFloat(nil, f, 'g', -1, bits)
		case TypeDate:
			return quoteASCII(time.Unix(pick()*86400, 0).UTC().Format("2006-01-02"))
		case TypeTimestamp, TypeTimestampNTZ:
			ms := floorDiv(pick(), 1000)
			layout := "2006-01-02T15:04:05.000Z"
			if t == TypeTimestampNTZ {
				layout = "2006-01-02T15:04:05.000"
			}
			return quoteASCII(time.UnixMilli(ms).UTC().Format(layout))
		case TypeString:
			var str string
			var ok bool
			if isMin {
				str, ok = truncateMinString(s.minS, c.prefixLen), true
			} else {
				str, ok = truncateMaxString(s.maxS, c.prefixLen)
			}
			if !ok {
				return nil
			}
			var b bytes.Buffer
			writeJSONString(&b, str)
			return b.Bytes()
		}
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func quoteASCII(s string) []byte { return []byte(`"` + s + `"`) }

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // strings always marshal
	b.Write(enc)
}

// truncateMinString keeps the first prefixLen characters: any value of the
// column is ≥ a prefix of the minimum.
func truncateMinString(s string, prefixLen int) string {
	if utf8.RuneCountInString(s) <= prefixLen {
		return s
	}
	i, n := 0, 0
	for i < len(s) && n < prefixLen {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return s[:i]
}

const maxRune = "\U0010FFFF"

// truncateMaxString returns an upper bound for s that is at most about
// prefixLen characters: a prefix followed by a tie-breaker greater than the
// character it replaces (U+007F when that character is ASCII below it,
// else U+10FFFF). A character that already is U+10FFFF cannot be beaten, so
// the prefix grows past it; if no bound is found within 2*prefixLen
// characters, there is none (ok=false) and the max is omitted. Lengths are
// counted in Unicode code points (Spark counts UTF-16 units; the bound is
// valid either way).
func truncateMaxString(s string, prefixLen int) (string, bool) {
	if utf8.RuneCountInString(s) <= prefixLen {
		return s, true
	}
	if prefixLen <= 0 {
		return "", false
	}
	i, n := 0, 0
	for i < len(s) && n < prefixLen {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	for n <= 2*prefixLen {
		if i >= len(s) {
			return s, true
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.MaxRune:
			i += size
			n++
		case r < 0x7F:
			return s[:i] + "\x7F", true
		default:
			return s[:i] + maxRune, true
		}
	}
	return "", false
}
