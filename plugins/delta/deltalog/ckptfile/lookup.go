package ckptfile

import (
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Leaf is a resolved leaf column (nil when the file does not have it).
type Leaf = *parquet.Column

// MapLeaves are the key and value leaves of a map<string,string> column.
type MapLeaves struct{ Key, Value Leaf }

// Lookup is the one column lookup of checkpoint reading (deltalog's
// checkpoint and sidecar readers): columns are found by name, and a leaf is served only at the repetition depth its
// decoder reads — 0 for a scalar (one value per row), 1 for a list element
// or a map key (ReadCells counts rows at repetition level 0 and pairs map
// keys with values by position, which is only sound one level deep). The
// checkpoint schema puts every action at the top level as an optional
// struct, so in any Delta checkpoint (ours, Spark's, delta-rs's, the
// kernel's) the scalars are at depth 0 and the lists and maps at depth 1;
// a column present at another depth is not one the reader knows how to
// decode and reads as missing. Refused names such columns (tests assert
// there are none in real checkpoints).
type Lookup struct {
	Root    *parquet.Column
	Refused []string
}

// Child is root/names, or nil.
func Child(col *parquet.Column, names ...string) *parquet.Column {
	for _, n := range names {
		if col == nil {
			return nil
		}
		col = col.Column(n)
	}
	return col
}

func (l *Lookup) refuse(names []string) {
	l.Refused = append(l.Refused, strings.Join(names, "."))
}

// Scalar is the non-repeated leaf at root/names, or nil.
func (l *Lookup) Scalar(names ...string) Leaf {
	col := Child(l.Root, names...)
	if col == nil {
		return nil
	}
	if !col.Leaf() || col.MaxRepetitionLevel() != 0 {
		l.refuse(names)
		return nil
	}
	return col
}

// List is the element leaf of the list<string> at root/names, whatever
// the writer called its repeated group ("list/element", "bag/array", or a
// legacy two-level list), or nil.
func (l *Lookup) List(names ...string) Leaf {
	col := Child(l.Root, names...)
	if col == nil {
		return nil
	}
	for !col.Leaf() {
		cs := col.Columns()
		if len(cs) != 1 {
			l.refuse(names)
			return nil
		}
		col = cs[0]
	}
	if col.MaxRepetitionLevel() != 1 {
		l.refuse(names)
		return nil
	}
	return col
}

// Map finds the key and value leaves of the map<string,string> at
// root/names whatever the repeated group is called ("key_value",
// "entries", ...).
func (l *Lookup) Map(names ...string) MapLeaves {
	col := Child(l.Root, names...)
	if col == nil {
		return MapLeaves{}
	}
	if col.Leaf() || len(col.Columns()) != 1 {
		l.refuse(names)
		return MapLeaves{}
	}
	kv := col.Columns()[0]
	if kv.Leaf() || len(kv.Columns()) != 2 {
		l.refuse(names)
		return MapLeaves{}
	}
	k, v := kv.Column("key"), kv.Column("value")
	if k == nil || v == nil {
		k, v = kv.Columns()[0], kv.Columns()[1]
	}
	if !k.Leaf() || !v.Leaf() || k.MaxRepetitionLevel() != 1 {
		l.refuse(names)
		return MapLeaves{}
	}
	return MapLeaves{k, v}
}
