package encode

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Keys and the rows that hold them: the read side of write_mode = upsert.
//
// A change names its key in JSON; a data file holds it in the column's
// type. Both are brought to one text per key column, the partition-value
// form (deltalog.SerializePartitionValue: integers in decimal, decimals
// with exactly scale digits, dates YYYY-MM-DD, ...; strings as they are),
// so a key is compared in its column's type: 1, 1.0 and 1e0 name one row
// of a long column, as the encoder would have written each ("1" is refused
// there, as the encoder refuses it in a row). A change's
// key goes through the encoder's own coercions (Keys.Of), so a key the
// encoder would refuse in a row is refused here too.

// keyPad is the one non-key column of a Keys encoder: the encoder refuses
// a table whose every column is a partition column.
const keyPad = "\x00picomq_key_pad"

// Keys renders change keys of one table's key columns.
type Keys struct {
	cols  []string
	types []deltalog.DataType
	enc   *Encoder
	buf   []byte
}

// NewKeys checks the key columns against the table's schema (each a
// top-level column of a primitive type) and returns their renderer.
func NewKeys(schema *deltalog.StructType, cols []string) (*Keys, error) {
	k := &Keys{cols: cols}
	fields := make([]deltalog.StructField, 0, len(cols)+1)
	for _, c := range cols {
		f := schema.Field(c)
		if f == nil {
			return nil, fmt.Errorf("key column %q is not a column of the table", c)
		}
		if _, ok := f.Type.(deltalog.DecimalType); !ok {
			if _, ok := f.Type.(deltalog.PrimitiveType); !ok || f.Type == deltalog.TypeVariant || f.Type == deltalog.TypeVoid {
				return nil, fmt.Errorf("key column %q is of type %s: want a primitive type", c, f.Type)
			}
		}
		k.types = append(k.types, f.Type)
		fields = append(fields, deltalog.StructField{Name: c, Type: f.Type, Nullable: true})
	}
	fields = append(fields, deltalog.StructField{Name: keyPad, Type: deltalog.TypeBoolean, Nullable: true})
	enc, err := New(&deltalog.StructType{Fields: fields}, cols, Options{})
	if err != nil {
		return nil, fmt.Errorf("key columns: %w", err)
	}
	k.enc = enc
	return k, nil
}

// Of renders one change's key, each column's JSON value as written (in
// key column order). The error is a *RecordError when a value does not fit
// its column.
func (k *Keys) Of(values [][]byte) (string, error) {
	k.buf = append(k.buf[:0], '{')
	for i, v := range values {
		if i > 0 {
			k.buf = append(k.buf, ',')
		}
		k.buf = strconv.AppendQuote(k.buf, k.cols[i])
		k.buf = append(k.buf, ':')
		k.buf = append(k.buf, v...)
	}
	k.buf = append(k.buf, '}')
	defer k.enc.Reset()
	if err := k.enc.Add(k.buf, 0); err != nil {
		return "", err
	}
	var b strings.Builder
	for p := range k.cols {
		s, err := keyText(k.types[p], k.enc.partitionValue(p, 0))
		if err != nil {
			return "", fmt.Errorf("key column %q: %w", k.cols[p], err)
		}
		appendKeyPart(&b, s)
	}
	return b.String(), nil
}

func appendKeyPart(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

// keyText is a key column's value (a Go value SerializePartitionValue
// takes) as compared: strings and binaries as they are (the partition
// form would make "" null), the rest in the partition-value form.
func keyText(t deltalog.DataType, v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", errors.New("null")
	case string:
		if t == deltalog.TypeString || t == deltalog.TypeBinary {
			return v, nil
		}
	case []byte:
		return string(v), nil
	}
	s, err := deltalog.SerializePartitionValue(t, v)
	if err != nil {
		return "", err
	}
	if s == nil {
		return "", errors.New("null")
	}
	return *s, nil
}

// Types returns the key columns' types, in order.
func (k *Keys) Types() []deltalog.DataType { return k.types }

// PartitionText is a partition value of key column i (as add.partitionValues
// holds it) as compared; ok is false for null, which no key equals. err
// says the value cannot be read as the column's type (a writer's form
// this one does not know): the file may hold any key.
func (k *Keys) PartitionText(i int, v *string) (s string, ok bool, err error) {
	if v == nil {
		return "", false, nil
	}
	var val any = *v
	if t := k.types[i]; t == deltalog.TypeTimestamp || t == deltalog.TypeTimestampNTZ {
		tm, ok := deltalog.PartitionTimestamp(*v)
		if !ok {
			return "", false, fmt.Errorf("partition value %q of key column %q is not a timestamp", *v, k.cols[i])
		}
		val = tm
	}
	s, err = keyText(k.types[i], val)
	if err != nil {
		return "", false, fmt.Errorf("partition value %q of key column %q: %w", *v, k.cols[i], err)
	}
	return s, true, nil
}

// Filtered is the result of Filter.
type Filtered struct {
	Merged
	Dropped int64 // rows dropped; 0: nothing written
}

// Filter writes the rows of src whose key is not in drop to a new file on
// w, with the encoder's writer settings and stats collected anew (as
// Merge). pv are the file's partition values (key columns may be partition
// columns). When no row's key is in drop, nothing is written and Dropped
// is 0. Rows whose key column is null match no key.
func (k *Keys) Filter(w io.Writer, src *parquet.File, pv deltalog.PartitionValues, drop map[string]bool,
	stats *deltalog.StatsCollector, createdBy string) (Filtered, error) {
	keep, dropped, err := k.keep(src, pv, drop)
	if err != nil || dropped == 0 {
		return Filtered{}, err
	}
	schema := src.Schema()
	feed := newMergeFeed(schema, stats)
	if createdBy == "" {
		createdBy = defaultCreatedBy
	}
	config, err := parquet.NewWriterConfig(writerOptions(copySchema(schema), createdBy, defaultDictionaryMax, schema.Columns())...)
	if err != nil {
		return Filtered{}, fmt.Errorf("encode: filter: parquet writer config: %w", err)
	}
	cw := &countingWriter{w: w}
	pw := parquet.NewGenericWriter[any](cw, config)
	stats.Reset()
	kept := int64(len(keep)) - dropped
	// Column by column, as Merge copies: only the kept rows' values.
	buf := make([]parquet.Value, mergeChunk)
	for ci, col := range pw.ColumnWriters() {
		leaf, _ := schema.Lookup(schema.Columns()[ci]...)
		row := 0
		for _, rg := range src.RowGroups() {
			if err := copyColumn(col, rg.ColumnChunks()[ci], ci, leaf.MaxRepetitionLevel > 0, buf, feed, keep, &row); err != nil {
				return Filtered{}, fmt.Errorf("encode: filter: column %v: %w", schema.Columns()[ci], err)
			}
		}
	}
	if err := pw.Close(); err != nil {
		return Filtered{}, fmt.Errorf("encode: filter: write parquet: %w", err)
	}
	for _, st := range feed.missing {
		for range kept {
			st.ObserveNull()
		}
	}
	stats.AddRows(kept)
	js, err := stats.JSON()
	if err != nil {
		return Filtered{}, fmt.Errorf("encode: filter: statistics: %w", err)
	}
	return Filtered{Merged: Merged{NumRecords: kept, Size: cw.n, Stats: js}, Dropped: dropped}, nil
}

// keep reads the key columns of src and marks the rows whose key is not
// in drop.
func (k *Keys) keep(src *parquet.File, pv deltalog.PartitionValues, drop map[string]bool) (keep []bool, dropped int64, err error) {
	n := int(src.NumRows())
	parts := make([][]string, len(k.cols)) // per key column, per row; nil entry when null
	nulls := make([]bool, n)
	schema := src.Schema()
	for c, name := range k.cols {
		if v, ok := pv[name]; ok { // a partition column: one value for the file
			s, ok, err := k.PartitionText(c, v)
			if err != nil {
				// Kept, the rows would live on beside their keys' new rows.
				return nil, 0, fmt.Errorf("encode: filter: %w", err)
			}
			if !ok {
				return make([]bool, n), 0, nil // null: no key matches; keep all
			}
			col := make([]string, n)
			for i := range col {
				col[i] = s
			}
			parts[c] = col
			continue
		}
		leaf, ok := schema.Lookup(name)
		if !ok {
			// A key column the file lacks (added later): null in every row.
			for i := range nulls {
				nulls[i] = true
			}
			continue
		}
		col, err := k.readColumn(src, leaf, c, nulls)
		if err != nil {
			return nil, 0, fmt.Errorf("encode: key column %q: %w", name, err)
		}
		parts[c] = col
	}
	keep = make([]bool, n)
	var b strings.Builder
	for i := range n {
		if nulls[i] {
			keep[i] = true
			continue
		}
		b.Reset()
		for c := range parts {
			appendKeyPart(&b, parts[c][i])
		}
		if drop[b.String()] {
			dropped++
		} else {
			keep[i] = true
		}
	}
	return keep, dropped, nil
}

// readColumn reads a top-level primitive column's values as key texts,
// one per row, marking null rows in nulls.
func (k *Keys) readColumn(src *parquet.File, leaf parquet.LeafColumn, c int, nulls []bool) ([]string, error) {
	if leaf.MaxRepetitionLevel > 0 {
		return nil, errors.New("a repeated column cannot be a key")
	}
	t := k.types[c]
	conv, scale := leafConv(t, leaf.Node)
	out := make([]string, 0, len(nulls))
	buf := make([]parquet.Value, mergeChunk)
	for _, rg := range src.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		for {
			p, err := pages.ReadPage()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				pages.Close()
				return nil, err
			}
			vr := p.Values()
			for {
				n, rerr := vr.ReadValues(buf)
				for _, v := range buf[:n] {
					i := len(out)
					if v.IsNull() {
						nulls[i] = true
						out = append(out, "")
						continue
					}
					s, err := valueKeyText(t, v, conv, scale)
					if err != nil {
						parquet.Release(p)
						pages.Close()
						return nil, err
					}
					out = append(out, s)
				}
				if errors.Is(rerr, io.EOF) {
					break
				}
				if rerr != nil {
					parquet.Release(p)
					pages.Close()
					return nil, rerr
				}
			}
			parquet.Release(p)
		}
		pages.Close()
	}
	if len(out) != len(nulls) {
		return nil, fmt.Errorf("read %d values for %d rows", len(out), len(nulls))
	}
	return out, nil
}

// valueKeyText is a stored value as keyText renders it.
func valueKeyText(t deltalog.DataType, v parquet.Value, conv mergeConv, scale int64) (string, error) {
	if dt, ok := t.(deltalog.DecimalType); ok {
		r := new(big.Rat).SetFrac(unscaled(v), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dt.Scale)), nil))
		return keyText(t, r)
	}
	switch t {
	case deltalog.TypeString, deltalog.TypeBinary:
		return string(v.ByteArray()), nil
	case deltalog.TypeBoolean:
		return keyText(t, v.Boolean())
	case deltalog.TypeByte, deltalog.TypeShort, deltalog.TypeInteger, deltalog.TypeDate, deltalog.TypeLong:
		// By the stored kind: a column widened to long (typeWidening)
		// keeps INT32 in the files written before.
		if v.Kind() == parquet.Int32 {
			return keyText(t, int64(v.Int32()))
		}
		return keyText(t, v.Int64())
	case deltalog.TypeFloat:
		return keyText(t, v.Float())
	case deltalog.TypeDouble:
		return keyText(t, v.Double())
	case deltalog.TypeTimestamp, deltalog.TypeTimestampNTZ:
		if conv != convTimestamp {
			return "", fmt.Errorf("a %s stored as %s cannot be compared", t, v.Kind())
		}
		x := v.Int64()
		if scale > 0 {
			x *= scale
		} else {
			d := -scale
			q := x / d
			if x%d != 0 && x < 0 {
				q--
			}
			x = q
		}
		return keyText(t, x)
	}
	return "", fmt.Errorf("type %s cannot be a key", t)
}
