package avro

import (
	"fmt"
	"math"

	hamba "github.com/hamba/avro/v2"
)

// defaultJSON is the JSON of a reader field's default: hamba encodes the
// default with the field's schema, and the field's own plan decodes it, so
// a default follows exactly the rules of a decoded value.
func defaultJSON(f *hamba.Field) ([]byte, error) {
	if !f.HasDefault() {
		return nil, fmt.Errorf("avro: reader field %q is not in the writer schema and has no default", f.Name())
	}
	if err := exactDefault(f.Type(), f.Default()); err != nil {
		return nil, fmt.Errorf("avro: default of reader field %q: %w", f.Name(), err)
	}
	bin, err := hamba.Marshal(f.Type(), f.Default())
	if err != nil {
		return nil, fmt.Errorf("avro: default of reader field %q: %w", f.Name(), err)
	}
	n, err := newPlanner(false).build(f.Type(), f.Type(), nil)
	if err != nil {
		return nil, err
	}
	out, err := (&codec{root: n}).AppendJSON(nil, bin)
	if err != nil {
		return nil, fmt.Errorf("avro: default of reader field %q: %w", f.Name(), err)
	}
	return out, nil
}

// exactDefault refuses an int or a long in a default that hamba may have
// changed: its parser reads the schema's JSON numbers as float64, so a
// long default of magnitude 2^53 or more may not be the number the schema
// says, and it keeps an int default as a Go int whose low 32 bits its
// encoder writes (3000000000 would land as -1294967296). A record must
// never land with a value nobody wrote.
func exactDefault(s hamba.Schema, v any) error {
	switch t := deref(s).(type) {
	case *hamba.PrimitiveSchema:
		if t.Type() != hamba.Long && t.Type() != hamba.Int {
			return nil
		}
		var f float64
		switch n := v.(type) {
		case float64:
			f = n
		case int64:
			f = float64(n)
		case int:
			f = float64(n)
		default:
			return nil
		}
		if t.Type() == hamba.Int && (f < math.MinInt32 || f > math.MaxInt32) {
			return fmt.Errorf("int default %.0f is out of the int range", f)
		}
		if math.Abs(f) >= 1<<53 {
			return fmt.Errorf("a long of magnitude 2^53 or more (%.0f) cannot be read exactly from a schema", f)
		}
	case *hamba.ArraySchema:
		items, _ := v.([]any)
		for _, x := range items {
			if err := exactDefault(t.Items(), x); err != nil {
				return err
			}
		}
	case *hamba.MapSchema:
		values, _ := v.(map[string]any)
		for _, x := range values {
			if err := exactDefault(t.Values(), x); err != nil {
				return err
			}
		}
	case *hamba.RecordSchema:
		values, _ := v.(map[string]any)
		for _, f := range t.Fields() {
			if x, ok := values[f.Name()]; ok {
				if err := exactDefault(f.Type(), x); err != nil {
					return err
				}
			}
		}
	case *hamba.UnionSchema:
		for _, b := range t.Types() {
			if err := exactDefault(b, v); err != nil {
				return err
			}
		}
	}
	return nil
}
