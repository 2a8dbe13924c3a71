package ckptfile

import (
	"maps"
	"math/big"
	"slices"
	"unsafe"

	"github.com/parquet-go/parquet-go"
)

// Row is one checkpoint row being written (Encoder.Begin): the caller
// fills the fields of its action, each leaf in column order, and leaves
// the levels, null groups and physical types to Row. Strings are not
// copied: they must stay unchanged until the Encoder's next Cut, Finish
// or Close.
type Row struct {
	vals parquet.Row
}

func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Null writes f (every leaf below it) as null; its parent is present (or f
// is top-level).
func (r *Row) Null(f *Field) {
	if f.nulls == nil {
		for c := f.col; c < f.col+f.nleaves; c++ {
			f.nulls = append(f.nulls, parquet.Value{}.Level(0, f.def-1, c))
		}
	}
	r.vals = append(r.vals, f.nulls...)
}

func (r *Row) value(f *Field, v parquet.Value) {
	r.vals = append(r.vals, v.Level(0, f.def, f.col))
}

// Str writes a String leaf.
func (r *Row) Str(f *Field, s string) { r.value(f, parquet.ByteArrayValue(unsafeBytes(s))) }

// StrOrNull writes a String leaf, null when s is empty.
func (r *Row) StrOrNull(f *Field, s string) {
	if s == "" {
		r.Null(f)
		return
	}
	r.Str(f, s)
}

// Int64 writes an Int64 or Timestamp leaf.
func (r *Row) Int64(f *Field, v int64) { r.value(f, parquet.Int64Value(v)) }

// Int64p writes an Int64 leaf, null when v is nil.
func (r *Row) Int64p(f *Field, v *int64) {
	if v == nil {
		r.Null(f)
		return
	}
	r.Int64(f, *v)
}

// Int32 writes an Int32, Int8, Int16 or Date leaf.
func (r *Row) Int32(f *Field, v int32) { r.value(f, parquet.Int32Value(v)) }

// Bool writes a Bool leaf.
func (r *Row) Bool(f *Field, b bool) { r.value(f, parquet.BooleanValue(b)) }

// Float writes a Float leaf.
func (r *Row) Float(f *Field, v float32) { r.value(f, parquet.FloatValue(v)) }

// Double writes a Double leaf.
func (r *Row) Double(f *Field, v float64) { r.value(f, parquet.DoubleValue(v)) }

// Decimal writes a Decimal leaf from its unscaled value, which must fit
// the field's precision.
func (r *Row) Decimal(f *Field, unscaled *big.Int) {
	switch {
	case f.Precision <= 9:
		r.Int32(f, int32(unscaled.Int64()))
	case f.Precision <= 18:
		r.Int64(f, unscaled.Int64())
	default:
		r.value(f, parquet.FixedLenByteArrayValue(twosComplementBytes(unscaled, DecimalWidth(f.Precision))))
	}
}

// twosComplementBytes renders x big-endian in width bytes.
func twosComplementBytes(x *big.Int, width int) []byte {
	out := make([]byte, width)
	v := new(big.Int).Set(x)
	if v.Sign() < 0 {
		v.Add(v, new(big.Int).Lsh(big.NewInt(1), uint(8*width)))
	}
	b := v.Bytes()
	copy(out[width-len(b):], b)
	return out
}

// List writes a StringList: null when not present, else its elements
// (none: an empty list).
func (r *Row) List(f *Field, elems []string, present bool) {
	if !present {
		r.Null(f)
		return
	}
	if len(elems) == 0 {
		r.vals = append(r.vals, parquet.Value{}.Level(0, f.def, f.col))
		return
	}
	for i, e := range elems {
		r.vals = append(r.vals, parquet.ByteArrayValue(unsafeBytes(e)).Level(min(i, 1), f.def+2, f.col))
	}
}

// Map writes a StringMap given as its keys (in the order to write them)
// and a lookup of their values (false: a null value).
func (r *Row) Map(f *Field, keys []string, value func(string) (string, bool)) {
	if len(keys) == 0 {
		r.vals = append(r.vals, parquet.Value{}.Level(0, f.def, f.col), parquet.Value{}.Level(0, f.def, f.col+1))
		return
	}
	for i, k := range keys {
		r.vals = append(r.vals, parquet.ByteArrayValue(unsafeBytes(k)).Level(min(i, 1), f.def+1, f.col))
	}
	for i, k := range keys {
		if v, ok := value(k); ok {
			r.vals = append(r.vals, parquet.ByteArrayValue(unsafeBytes(v)).Level(min(i, 1), f.def+2, f.col+1))
		} else {
			r.vals = append(r.vals, parquet.Value{}.Level(min(i, 1), f.def+1, f.col+1))
		}
	}
}

// StrMap writes a StringMap from m, keys sorted: null when not present.
func (r *Row) StrMap(f *Field, m map[string]string, present bool) {
	if !present {
		r.Null(f)
		return
	}
	r.Map(f, slices.Sorted(maps.Keys(m)), func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}
