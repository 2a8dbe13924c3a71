package ckptfile

import (
	"io"

	"github.com/parquet-go/parquet-go"
)

// Cell is one non-null leaf value: the row it belongs to, its position in
// the column chunk's value stream (to pair map keys with values), and the
// value itself.
type Cell struct {
	Row int32
	Pos int32
	Val parquet.Value // ByteArray values are cloned, so cells outlive pages
}

// Str is the value as a string.
func (c Cell) Str() string { return string(c.Val.ByteArray()) }

// Int64 is the value as an integer, INT32 or INT64.
func (c Cell) Int64() int64 {
	switch c.Val.Kind() {
	case parquet.Int32:
		return int64(c.Val.Int32())
	default:
		return c.Val.Int64()
	}
}

// ReadCells returns the non-null values of one leaf column in a row group.
// Nulls (the vast majority in checkpoint rows that hold other actions) cost
// a level decode and nothing else.
func ReadCells(rg parquet.RowGroup, col Leaf) ([]Cell, error) {
	if col == nil {
		return nil, nil
	}
	chunk := rg.ColumnChunks()[col.Index()]
	pages := chunk.Pages()
	defer pages.Close()
	maxDef := col.MaxDefinitionLevel()
	var (
		out  []Cell
		buf  = make([]parquet.Value, 1024)
		row  = int32(-1)
		pos  = int32(-1)
		page parquet.Page
		err  error
	)
	for {
		page, err = pages.ReadPage()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		vr := page.Values()
		for {
			n, rerr := vr.ReadValues(buf)
			for _, v := range buf[:n] {
				pos++
				if v.RepetitionLevel() == 0 {
					row++
				}
				if v.DefinitionLevel() == maxDef && !v.IsNull() {
					out = append(out, Cell{Row: row, Pos: pos, Val: v.Clone()})
				}
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				parquet.Release(page)
				return nil, rerr
			}
		}
		parquet.Release(page)
	}
}

// Cursor walks the cells of one leaf in row order: At reads a scalar,
// Strs a list<string> element.
type Cursor struct {
	Cells []Cell
	i     int
}

// At returns the value of row r. Rows must be asked for in ascending order.
func (c *Cursor) At(r int32) (Cell, bool) {
	for c.i < len(c.Cells) && c.Cells[c.i].Row < r {
		c.i++
	}
	if c.i < len(c.Cells) && c.Cells[c.i].Row == r {
		return c.Cells[c.i], true
	}
	return Cell{}, false
}

// Str returns row r's value as a string.
func (c *Cursor) Str(r int32) (string, bool) {
	v, ok := c.At(r)
	if !ok {
		return "", false
	}
	return v.Str(), true
}

// Int64 returns row r's value as an integer (INT32 or INT64).
func (c *Cursor) Int64(r int32) (int64, bool) {
	v, ok := c.At(r)
	if !ok {
		return 0, false
	}
	return v.Int64(), true
}

// Bool returns row r's value as a boolean.
func (c *Cursor) Bool(r int32) (bool, bool) {
	v, ok := c.At(r)
	if !ok {
		return false, false
	}
	return v.Val.Boolean(), true
}

// Strs returns the values of row r (a list's elements), nil when it has
// none.
func (c *Cursor) Strs(r int32) []string {
	for c.i < len(c.Cells) && c.Cells[c.i].Row < r {
		c.i++
	}
	var out []string
	for ; c.i < len(c.Cells) && c.Cells[c.i].Row == r; c.i++ {
		out = append(out, c.Cells[c.i].Str())
	}
	return out
}

// Int64p returns row r's value as an integer, nil when it has none.
func (c *Cursor) Int64p(r int32) *int64 {
	v, ok := c.At(r)
	if !ok {
		return nil
	}
	x := v.Int64() // declared here, not above: it escapes, so is allocated where declared
	return &x
}

// MapCursor pairs the key and value cells of a map column by their
// position in the value stream (a null value has no Cell).
type MapCursor struct {
	keys, vals []Cell
	ki, vi     int
}

// Each calls fn with the entries of row r, v nil for a null value.
func (m *MapCursor) Each(r int32, fn func(k string, v *string)) {
	for m.ki < len(m.keys) && m.keys[m.ki].Row < r {
		m.ki++
	}
	for ; m.ki < len(m.keys) && m.keys[m.ki].Row == r; m.ki++ {
		k := m.keys[m.ki]
		for m.vi < len(m.vals) && m.vals[m.vi].Pos < k.Pos {
			m.vi++
		}
		if m.vi < len(m.vals) && m.vals[m.vi].Pos == k.Pos {
			s := m.vals[m.vi].Str()
			fn(k.Str(), &s)
		} else {
			fn(k.Str(), nil)
		}
	}
}

// Strings returns row r's map, a null value as "", nil when the row has
// no entries.
func (m *MapCursor) Strings(r int32) map[string]string {
	var out map[string]string
	m.Each(r, func(k string, v *string) {
		if out == nil {
			out = map[string]string{}
		}
		if v != nil {
			out[k] = *v
		} else {
			out[k] = ""
		}
	})
	return out
}

// ReadMapCursor reads the entries of a map<string,string> column.
func ReadMapCursor(rg parquet.RowGroup, ml MapLeaves) (*MapCursor, error) {
	if ml.Key == nil {
		return &MapCursor{}, nil
	}
	keys, err := ReadCells(rg, ml.Key)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 { // no entries in the row group: the values are all null
		return &MapCursor{}, nil
	}
	vals, err := ReadCells(rg, ml.Value)
	if err != nil {
		return nil, err
	}
	return &MapCursor{keys: keys, vals: vals}, nil
}

// ReadCursors fills cursors from leaves, given as pairs (Leaf, *Cursor).
func ReadCursors(rg parquet.RowGroup, pairs ...any) error {
	for i := 0; i < len(pairs); i += 2 {
		cells, err := ReadCells(rg, pairs[i].(Leaf))
		if err != nil {
			return err
		}
		pairs[i+1].(*Cursor).Cells = cells
	}
	return nil
}

// RowSet is the set of rows where a map column is non-null.
type RowSet struct {
	rows []int32
	i    int
}

// Has says whether row r is in the set. Rows must be asked for in
// ascending order.
func (s *RowSet) Has(r int32) bool {
	for s.i < len(s.rows) && s.rows[s.i] < r {
		s.i++
	}
	return s.i < len(s.rows) && s.rows[s.i] == r
}

// MapPresence reads the definition levels of a map's key leaf: a row whose
// level reaches the map group itself has a map (maybe empty).
func MapPresence(rg parquet.RowGroup, ml MapLeaves) (*RowSet, error) {
	set := &RowSet{}
	if ml.Key == nil {
		return set, nil
	}
	// The map group is optional, one level below the key's repeated group.
	mapDef := ml.Key.MaxDefinitionLevel() - 1
	err := forEachLevel(rg, ml.Key, func(row int32, rep, def int) {
		if rep == 0 && def >= mapDef {
			set.rows = append(set.rows, row)
		}
	})
	return set, err
}

// forEachLevel calls fn with the levels of every value of a leaf chunk.
func forEachLevel(rg parquet.RowGroup, col Leaf, fn func(row int32, rep, def int)) error {
	pages := rg.ColumnChunks()[col.Index()].Pages()
	defer pages.Close()
	buf := make([]parquet.Value, 1024)
	row := int32(-1)
	for {
		page, err := pages.ReadPage()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		vr := page.Values()
		for {
			n, rerr := vr.ReadValues(buf)
			for _, v := range buf[:n] {
				if v.RepetitionLevel() == 0 {
					row++
				}
				fn(row, v.RepetitionLevel(), v.DefinitionLevel())
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				parquet.Release(page)
				return rerr
			}
		}
		parquet.Release(page)
	}
}
