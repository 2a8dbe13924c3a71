package avro

import (
	"errors"
	"fmt"
	"sort"

	hamba "github.com/hamba/avro/v2"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// Compile compiles writer, the schema every datum was written with (Avro
// JSON text), into a Codec. refs holds the texts of the named types writer
// refers to (a Schema Registry's schema references, resolved transitively;
// the keys are not used, the texts name their types). reader, when not
// empty, is the schema the JSON follows: each datum is resolved from writer
// to reader by Avro's rules (fields added with a default, fields removed,
// promotions such as int to long), and the output is keyed by the reader's
// field names in the reader's order. A reader that cannot read writer's
// data is an error here, not per record.
//
// Its shape is the registry helper's: it closes over the block's reader
// schema and passes each schema id's text and references.
//
// A panic of the schema library is an error: a registered schema is
// anyone's input, and a crash would come back on every restart.
func Compile(writer string, refs map[string]string, reader string) (decode.Codec, error) {
	return guard(func() (decode.Codec, error) { return compile(writer, refs, reader) })
}

// guard runs f, turning a panic into an error.
func guard(f func() (decode.Codec, error)) (c decode.Codec, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("avro: the schema library panicked on this schema: %v", r)
		}
	}()
	return f()
}

// compile is Compile without the guard.
func compile(writer string, refs map[string]string, reader string) (decode.Codec, error) {
	cache := &hamba.SchemaCache{}
	if err := parseRefs(refs, cache); err != nil {
		return nil, err
	}
	w, err := hamba.ParseWithCache(writer, "", cache)
	if err != nil {
		return nil, fmt.Errorf("avro: writer schema: %w", err)
	}
	if reader == "" {
		n, err := newPlanner(false).build(w, w, nil)
		if err != nil {
			return nil, err
		}
		return newCodec(n), nil
	}
	// The reader schema stands alone: the writer's references belong to
	// the writer, and a reader naming a type it does not define is refused.
	r, err := hamba.ParseWithCache(reader, "", &hamba.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("avro: reader schema: %w", err)
	}
	if err := checkNotRecursive(r); err != nil {
		return nil, err
	}
	resolved, err := hamba.NewSchemaCompatibility().Resolve(r, w)
	if err != nil {
		return nil, fmt.Errorf("avro: the reader schema cannot read the writer schema: %w", err)
	}
	n, err := newPlanner(true).build(resolved, w, r)
	if err != nil {
		return nil, err
	}
	return newCodec(n), nil
}

// parseRefs parses the referenced schemas into cache. A reference may name
// types of another reference, and a map has no order: each round parses
// what it can until every text is parsed or a round makes no progress.
func parseRefs(refs map[string]string, cache *hamba.SchemaCache) error {
	names := make([]string, 0, len(refs))
	for name := range refs {
		names = append(names, name)
	}
	sort.Strings(names) // the same error for the same input
	for len(names) > 0 {
		var left []string
		var lastErr error
		for _, name := range names {
			if _, err := hamba.ParseWithCache(refs[name], "", cache); err != nil {
				left = append(left, name)
				lastErr = fmt.Errorf("avro: reference %q: %w", name, err)
			}
		}
		if len(left) == len(names) {
			return lastErr
		}
		names = left
	}
	return nil
}

// checkNotRecursive refuses a recursive reader schema: hamba's resolution
// follows named references without memory and would not return.
func checkNotRecursive(s hamba.Schema) error {
	var walk func(s hamba.Schema, open map[string]bool) error
	walk = func(s hamba.Schema, open map[string]bool) error {
		switch t := s.(type) {
		case *hamba.RefSchema:
			if open[t.Schema().FullName()] {
				return errors.New("avro: a recursive reader schema is not supported (" + t.Schema().FullName() + ")")
			}
			return walk(t.Schema(), open)
		case *hamba.RecordSchema:
			open[t.FullName()] = true
			defer delete(open, t.FullName())
			for _, f := range t.Fields() {
				if err := walk(f.Type(), open); err != nil {
					return err
				}
			}
		case *hamba.ArraySchema:
			return walk(t.Items(), open)
		case *hamba.MapSchema:
			return walk(t.Values(), open)
		case *hamba.UnionSchema:
			for _, b := range t.Types() {
				if err := walk(b, open); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(s, map[string]bool{})
}
