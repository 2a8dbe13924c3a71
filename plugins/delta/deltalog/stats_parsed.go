package deltalog

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
)

// add.stats_parsed in both directions: statsWriter writes it into a
// checkpoint from an add's stats JSON (checkpoint writing), statsParsed
// renders it back to the JSON form when a checkpoint has no stats column
// (checkpoint reading, state_read.go).

// ---- JSON → stats_parsed ---------------------------------------------------

// statsWriter fills add.stats_parsed (n) from an add's stats JSON.
type statsWriter struct {
	n *ckptfile.Field
}

func (s *statsWriter) write(w *ckptfile.Row, stats string) {
	if stats == "" {
		w.Null(s.n)
		return
	}
	dec := json.NewDecoder(strings.NewReader(stats))
	dec.UseNumber()
	var obj map[string]any
	if dec.Decode(&obj) != nil {
		w.Null(s.n)
		return
	}
	for _, k := range s.n.Kids {
		switch k.Name {
		case "numRecords":
			if n, ok := obj["numRecords"].(json.Number); ok {
				if v, err := n.Int64(); err == nil {
					w.Int64(k, v)
					continue
				}
			}
			w.Null(k)
		case "tightBounds":
			if b, ok := obj["tightBounds"].(bool); ok {
				w.Bool(k, b)
			} else {
				w.Null(k)
			}
		default: // minValues, maxValues, nullCount
			section, _ := obj[k.Name].(map[string]any)
			s.writeStruct(w, k, section)
		}
	}
}

func (s *statsWriter) writeStruct(w *ckptfile.Row, n *ckptfile.Field, obj map[string]any) {
	if obj == nil {
		w.Null(n)
		return
	}
	for _, k := range n.Kids {
		v, ok := obj[k.Name]
		switch {
		case !ok || v == nil:
			w.Null(k)
		case k.Kind == ckptfile.Group:
			sub, _ := v.(map[string]any)
			s.writeStruct(w, k, sub)
		case !writeStatValue(w, k, v):
			w.Null(k)
		}
	}
}

// writeStatValue writes one JSON stats value as leaf k (its kind is the
// column's type, statField); false when it does not parse (the bound is
// then left out, which only disables skipping on it).
func writeStatValue(w *ckptfile.Row, k *ckptfile.Field, v any) bool {
	num, isNum := v.(json.Number)
	str, isStr := v.(string)
	switch k.Kind {
	case ckptfile.Decimal:
		if !isNum {
			return false
		}
		r, ok := new(big.Rat).SetString(num.String())
		if !ok {
			return false
		}
		u, err := unscaledDecimal(r, DecimalType{Precision: k.Precision, Scale: k.Scale})
		if err != nil {
			return false
		}
		w.Decimal(k, u)
	case ckptfile.Int8, ckptfile.Int16, ckptfile.Int32, ckptfile.Int64:
		n, err := num.Int64()
		if !isNum || err != nil {
			return false
		}
		if k.Kind == ckptfile.Int64 {
			w.Int64(k, n)
		} else {
			w.Int32(k, int32(n))
		}
	case ckptfile.Float, ckptfile.Double:
		f, err := num.Float64()
		if !isNum || err != nil {
			return false
		}
		if k.Kind == ckptfile.Float {
			w.Float(k, float32(f))
		} else {
			w.Double(k, f)
		}
	case ckptfile.Date:
		d, err := time.Parse("2006-01-02", str)
		if !isStr || err != nil {
			return false
		}
		w.Int32(k, int32(floorDiv(d.Unix(), 86400)))
	case ckptfile.Timestamp, ckptfile.TimestampNTZ:
		ts, ok := parseStatTimestamp(str)
		if !isStr || !ok {
			return false
		}
		w.Int64(k, ts.UnixMicro())
	case ckptfile.String:
		if !isStr {
			return false
		}
		w.Str(k, str)
	case ckptfile.Bool:
		b, ok := v.(bool)
		if !ok {
			return false
		}
		w.Bool(k, b)
	default:
		return false
	}
	return true
}

func parseStatTimestamp(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// ---- stats_parsed → JSON ---------------------------------------------------

// statsParsed is the add.stats_parsed subtree of one row group, its leaves
// read, ready to render the stats JSON of any row.
type statsParsed struct{ root *spNode }

type spNode struct {
	name string
	col  *parquet.Column // leaf
	kids []*spNode
	cur  ckptfile.Cursor
}

func buildSPNode(col *parquet.Column) *spNode {
	n := &spNode{name: col.Name()}
	if col.Leaf() {
		if col.MaxRepetitionLevel() != 0 {
			return nil // stats never hold lists or maps
		}
		n.col = col
		return n
	}
	for _, ch := range col.Columns() {
		if k := buildSPNode(ch); k != nil {
			n.kids = append(n.kids, k)
		}
	}
	return n
}

func readStatsParsed(rg parquet.RowGroup, col *parquet.Column) (*statsParsed, error) {
	root := buildSPNode(col)
	var load func(n *spNode) error
	load = func(n *spNode) error {
		if n.col != nil {
			cells, err := ckptfile.ReadCells(rg, n.col)
			n.cur.Cells = cells
			return err
		}
		for _, k := range n.kids {
			if err := load(k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := load(root); err != nil {
		return nil, err
	}
	return &statsParsed{root: root}, nil
}

// json renders row r's stats, "" when the row has none.
func (s *statsParsed) json(r int32) string {
	var b bytes.Buffer
	if !s.root.write(&b, r) {
		return ""
	}
	return b.String()
}

func (n *spNode) write(b *bytes.Buffer, r int32) bool {
	wrote := false
	for _, k := range n.kids {
		start := b.Len()
		if wrote {
			b.WriteByte(',')
		} else {
			b.WriteByte('{')
		}
		writeJSONString(b, k.name)
		b.WriteByte(':')
		ok := false
		if k.col != nil {
			if v, has := k.cur.At(r); has {
				ok = appendStatValue(b, k.col, v.Val)
			}
		} else {
			ok = k.write(b, r)
		}
		if !ok {
			b.Truncate(start)
			continue
		}
		wrote = true
	}
	if wrote {
		b.WriteByte('}')
	}
	return wrote
}

// appendStatValue renders one stats leaf the way stats.go writes the JSON
// form (dates as "YYYY-MM-DD", timestamps at millisecond precision,
// decimals as plain numbers); false for a value JSON cannot hold.
func appendStatValue(b *bytes.Buffer, col *parquet.Column, v parquet.Value) bool {
	var lt format.LogicalTypeValue
	if l := col.Type().LogicalType(); l != nil {
		lt = l.Value
	}
	switch t := lt.(type) {
	case *format.DateType:
		b.WriteString(`"` + time.Unix(int64(v.Int32())*86400, 0).UTC().Format("2006-01-02") + `"`)
		return true
	case *format.TimestampType:
		ms := v.Int64()
		switch t.Unit.Value.(type) {
		case *format.MicroSeconds:
			ms = floorDiv(ms, 1000)
		case *format.NanoSeconds:
			ms = floorDiv(ms, 1000000)
		}
		layout := "2006-01-02T15:04:05.000Z"
		if !t.IsAdjustedToUTC {
			layout = "2006-01-02T15:04:05.000"
		}
		b.WriteString(`"` + time.UnixMilli(ms).UTC().Format(layout) + `"`)
		return true
	case *format.DecimalType:
		var unscaled *big.Int
		switch v.Kind() {
		case parquet.Int32:
			unscaled = big.NewInt(int64(v.Int32()))
		case parquet.Int64:
			unscaled = big.NewInt(v.Int64())
		default:
			unscaled = twosComplement(v.ByteArray())
		}
		b.WriteString(formatUnscaled(unscaled.String(), int(t.Scale)))
		return true
	}
	switch v.Kind() {
	case parquet.Boolean:
		b.WriteString(strconv.FormatBool(v.Boolean()))
	case parquet.Int32:
		b.WriteString(strconv.FormatInt(int64(v.Int32()), 10))
	case parquet.Int64:
		b.WriteString(strconv.FormatInt(v.Int64(), 10))
	case parquet.Float:
		f := float64(v.Float())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 32))
	case parquet.Double:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case parquet.Int96:
		// Legacy Spark timestamps: nanoseconds of the day, then the Julian day.
		raw := v.ByteArray()
		if len(raw) != 12 {
			return false
		}
		nanos := int64(binary.LittleEndian.Uint64(raw[:8]))
		day := int64(binary.LittleEndian.Uint32(raw[8:]))
		ms := (day-2440588)*86400000 + floorDiv(nanos, 1000000)
		b.WriteString(`"` + time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") + `"`)
	case parquet.ByteArray, parquet.FixedLenByteArray:
		writeJSONString(b, string(v.ByteArray()))
	default:
		return false
	}
	return true
}

// twosComplement reads a big-endian two's complement integer.
func twosComplement(raw []byte) *big.Int {
	x := new(big.Int).SetBytes(raw)
	if len(raw) > 0 && raw[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(raw))))
	}
	return x
}
