package pqgroup

import (
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// Ordered is a required Parquet group whose fields keep the order they
// were added in. Add every field before handing the group to parquet-go;
// the zero value is an empty group.
type Ordered struct {
	fields []parquet.Field
	once   sync.Once
	goType reflect.Type
}

// New returns an empty group with room for n fields.
func New(n int) *Ordered { return &Ordered{fields: make([]parquet.Field, 0, n)} }

// Add appends a field named name whose type is node.
func (g *Ordered) Add(name string, node parquet.Node) {
	g.fields = append(g.fields, &field{Node: node, name: name})
}

func (g *Ordered) ID() int                     { return 0 }
func (g *Ordered) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g *Ordered) Optional() bool              { return false }
func (g *Ordered) Repeated() bool              { return false }
func (g *Ordered) Required() bool              { return true }
func (g *Ordered) Leaf() bool                  { return false }
func (g *Ordered) Fields() []parquet.Field     { return g.fields }
func (g *Ordered) Encoding() encoding.Encoding { return nil }
func (g *Ordered) Compression() compress.Codec { return nil }
func (g *Ordered) String() string              { return parquet.NewSchema("group", g).String() }

// GoType is only used by parquet-go's reflection paths (never when rows
// are written as parquet.Row): a struct of the fields' Go types, built once.
func (g *Ordered) GoType() reflect.Type {
	g.once.Do(func() {
		sf := make([]reflect.StructField, len(g.fields))
		for i, f := range g.fields {
			sf[i] = reflect.StructField{
				Name: "F" + strconv.Itoa(i),
				Type: f.GoType(),
				Tag:  reflect.StructTag(`parquet:"` + strings.ReplaceAll(f.Name(), `"`, ``) + `"`),
			}
		}
		g.goType = reflect.StructOf(sf)
	})
	return g.goType
}

// field names a node inside an Ordered group.
type field struct {
	parquet.Node
	name string
}

func (f *field) Name() string                      { return f.name }
func (f *field) Value(reflect.Value) reflect.Value { return reflect.Value{} }
