package deltalog

import (
	"io"

	"github.com/parquet-go/parquet-go"
)

// The one Parquet row decoder of checkpoint reading, under both
// projections (checkpoint_read.go's non-file actions, state_read.go's file
// actions, stats_parsed.go's typed stats): each wanted leaf column of a
// row group is read on its own into cells (its non-null values with their
// rows), and a cursor per column walks them as the action's rows are
// assembled in ascending order. A column the file lacks (nil leaf) reads as
// no cells. Columns are found by columnLookup (checkpoint_read.go).

// cell is one non-null leaf value: the row it belongs to, its position in
// the column chunk's value stream (to pair map keys with values), and the
// value itself.
type cell struct {
	row int32
	pos int32
	val parquet.Value // ByteArray values are cloned, so cells outlive pages
}

func (c cell) str() string { return string(c.val.ByteArray()) }

func (c cell) int64() int64 {
	switch c.val.Kind() {
	case parquet.Int32:
		return int64(c.val.Int32())
	default:
		return c.val.Int64()
	}
}

// readCells returns the non-null values of one leaf column in a row group.
// Nulls (the vast majority in checkpoint rows that hold other actions) cost
// a level decode and nothing else.
func readCells(rg parquet.RowGroup, col leaf) ([]cell, error) {
	if col == nil {
		return nil, nil
	}
	chunk := rg.ColumnChunks()[col.Index()]
	pages := chunk.Pages()
	defer pages.Close()
	maxDef := col.MaxDefinitionLevel()
	var (
		out  []cell
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
					out = append(out, cell{row: row, pos: pos, val: v.Clone()})
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

// cursor walks the cells of one leaf in row order: at reads a scalar,
// strs a list<string> element.
type cursor struct {
	cells []cell
	i     int
}

// at returns the value of row r. Rows must be asked for in ascending order.
func (c *cursor) at(r int32) (cell, bool) {
	for c.i < len(c.cells) && c.cells[c.i].row < r {
		c.i++
	}
	if c.i < len(c.cells) && c.cells[c.i].row == r {
		return c.cells[c.i], true
	}
	return cell{}, false
}

func (c *cursor) str(r int32) (string, bool) {
	v, ok := c.at(r)
	if !ok {
		return "", false
	}
	return v.str(), true
}

// strs returns the values of row r (a list's elements), nil when it has
// none.
func (c *cursor) strs(r int32) []string {
	for c.i < len(c.cells) && c.cells[c.i].row < r {
		c.i++
	}
	var out []string
	for ; c.i < len(c.cells) && c.cells[c.i].row == r; c.i++ {
		out = append(out, c.cells[c.i].str())
	}
	return out
}

func (c *cursor) int64p(r int32) *int64 {
	v, ok := c.at(r)
	if !ok {
		return nil
	}
	x := v.int64()
	return &x
}

// mapCursor pairs the key and value cells of a map column by their
// position in the value stream (a null value has no cell).
type mapCursor struct {
	keys, vals []cell
	ki, vi     int
}

func (m *mapCursor) each(r int32, fn func(k string, v *string)) {
	for m.ki < len(m.keys) && m.keys[m.ki].row < r {
		m.ki++
	}
	for ; m.ki < len(m.keys) && m.keys[m.ki].row == r; m.ki++ {
		k := m.keys[m.ki]
		for m.vi < len(m.vals) && m.vals[m.vi].pos < k.pos {
			m.vi++
		}
		if m.vi < len(m.vals) && m.vals[m.vi].pos == k.pos {
			s := m.vals[m.vi].str()
			fn(k.str(), &s)
		} else {
			fn(k.str(), nil)
		}
	}
}

// strings returns row r's map, a null value as "", nil when the row has
// no entries.
func (m *mapCursor) strings(r int32) map[string]string {
	var out map[string]string
	m.each(r, func(k string, v *string) {
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

// readMapCursor reads the entries of a map<string,string> column.
func readMapCursor(rg parquet.RowGroup, ml mapLeaves) (*mapCursor, error) {
	if ml.key == nil {
		return &mapCursor{}, nil
	}
	keys, err := readCells(rg, ml.key)
	if err != nil {
		return nil, err
	}
	vals, err := readCells(rg, ml.value)
	if err != nil {
		return nil, err
	}
	return &mapCursor{keys: keys, vals: vals}, nil
}

func readCursors(rg parquet.RowGroup, pairs ...any) error {
	for i := 0; i < len(pairs); i += 2 {
		cells, err := readCells(rg, pairs[i].(leaf))
		if err != nil {
			return err
		}
		pairs[i+1].(*cursor).cells = cells
	}
	return nil
}

// rowSet is the set of rows where a map column is non-null.
type rowSet struct {
	rows []int32
	i    int
}

func (s *rowSet) has(r int32) bool {
	for s.i < len(s.rows) && s.rows[s.i] < r {
		s.i++
	}
	return s.i < len(s.rows) && s.rows[s.i] == r
}

// mapPresence reads the definition levels of a map's key leaf: a row whose
// level reaches the map group itself has a map (maybe empty).
func mapPresence(rg parquet.RowGroup, ml mapLeaves) (*rowSet, error) {
	set := &rowSet{}
	if ml.key == nil {
		return set, nil
	}
	// The map group is optional, one level below the key's repeated group.
	mapDef := ml.key.MaxDefinitionLevel() - 1
	err := forEachLevel(rg, ml.key, func(row int32, rep, def int) {
		if rep == 0 && def >= mapDef {
			set.rows = append(set.rows, row)
		}
	})
	return set, err
}

// forEachLevel calls fn with the levels of every value of a leaf chunk.
func forEachLevel(rg parquet.RowGroup, col leaf, fn func(row int32, rep, def int)) error {
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
