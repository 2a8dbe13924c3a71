package definition

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// key is one declared key, read from a raw struct's tags (see keys.go).
type key struct {
	name        string
	index       int
	typ         string // as the docs show it
	def         *string
	derived     string
	required    string
	values      []string
	unsupported []string
	want        string
	min, max    *int64
	refused     string
	doc         string
}

var (
	definitionKeys = declared(reflect.TypeFor[rawDefinition]())
	topicKeys      = declared(reflect.TypeFor[rawTopic]())
	transformKeys  = declared(reflect.TypeFor[rawTransform]())
	fieldKeys      = declared(reflect.TypeFor[rawField]())
)

// declared reads the keys of a raw struct. A bad tag is a programming
// error, found by every test that parses a definition.
func declared(t reflect.Type) []key {
	var keys []key
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag
		k := key{name: tag.Get("toml"), index: i, typ: typeName(sf.Type), derived: tag.Get("derived"),
			required: tag.Get("required"), want: tag.Get("want"), refused: tag.Get("refused"), doc: tag.Get("doc")}
		if d, ok := tag.Lookup("default"); ok {
			k.def = &d
		}
		if v := tag.Get("values"); v != "" {
			k.values = strings.Split(v, ",")
		}
		if v := tag.Get("unsupported"); v != "" {
			k.unsupported = strings.Split(v, ",")
		}
		if k.want == "" {
			k.want = "%[1]q: want %[2]s"
		}
		for _, b := range []struct {
			tag string
			to  **int64
		}{{"min", &k.min}, {"max", &k.max}} {
			if v, ok := tag.Lookup(b.tag); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					panic(fmt.Sprintf("definition: %s.%s: %s %q", t.Name(), sf.Name, b.tag, v))
				}
				*b.to = &n
			}
		}
		if k.def != nil {
			// Only a pointer tells a key left out, so only a pointer
			// field takes a default other than its zero value.
			typ := sf.Type
			if typ.Kind() == reflect.Pointer {
				typ = typ.Elem()
			}
			v := reflect.New(typ)
			if err := setText(v, *k.def); err != nil || sf.Type.Kind() != reflect.Pointer && !v.Elem().IsZero() {
				panic(fmt.Sprintf("definition: %s.%s: default %q: %v (a default other than the zero value needs a pointer field)", t.Name(), sf.Name, *k.def, err))
			}
		}
		keys = append(keys, k)
	}
	return keys
}

var durationType = reflect.TypeFor[Duration]()

func typeName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return "array of tables"
	case t.Kind() == reflect.Slice:
		return "array of " + typeName(t.Elem()) + "s"
	case t.Kind() == reflect.Map:
		return "table"
	case t.Kind() == reflect.Interface:
		return "value"
	case t.Kind() == reflect.Int64:
		return "integer"
	}
	return t.Kind().String()
}

// setText sets *v (v a pointer) from a default written as text.
func setText(v reflect.Value, s string) error {
	if u, ok := v.Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(s))
	}
	switch e := v.Elem(); e.Kind() {
	case reflect.String:
		e.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		e.SetBool(b)
		return err
	case reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		e.SetInt(n)
		return err
	default:
		return fmt.Errorf("no default for a %s", e.Type())
	}
	return nil
}

// report records a problem with one key.
type report func(format string, args ...any)

// apply checks the keys of one raw struct (raw points to it) against their
// declaration, in declaration order: what is missing, refused, not among
// the values or out of range is an error of keyOf(name); a pointer field
// left out gets its default. A key that passes then gets its own checks,
// then[name] (also when it was left out), given the errorf of that key, so
// that errors come key by key.
func (p *parsed) apply(keys []key, raw any, keyOf func(string) string, then map[string]func(report)) {
	for name := range then {
		if !slices.ContainsFunc(keys, func(k key) bool { return k.name == name }) {
			panic("definition: checks for an undeclared key " + name)
		}
	}
	v := reflect.ValueOf(raw).Elem()
	for i := range keys {
		k := &keys[i]
		f := v.Field(k.index)
		switch {
		case k.required != "" && (f.IsZero() || f.Kind() == reflect.Slice && f.Len() == 0):
			p.errorf(keyOf(k.name), "missing: %s", k.required)
			continue
		case f.Kind() == reflect.Pointer && f.IsNil():
			if k.def != nil {
				f.Set(reflect.New(f.Type().Elem()))
				_ = setText(f, *k.def) // checked by declared
			}
		default:
			if msg := k.check(reflect.Indirect(f)); msg != "" {
				p.errorf(keyOf(k.name), "%s", msg)
				continue
			}
		}
		if fn := then[k.name]; fn != nil {
			fn(func(format string, args ...any) { p.errorf(keyOf(k.name), format, args...) })
		}
	}
}

// check returns what is wrong with a key's value, or "".
func (k *key) check(f reflect.Value) string {
	switch {
	case k.refused != "":
		return k.refused
	case k.values != nil:
		s := f.String()
		switch {
		case slices.Contains(k.values, s):
		case slices.Contains(k.unsupported, s):
			return fmt.Sprintf("%s %q is not supported by this runtime yet (%s)", k.name, s, oneOf(k.values))
		default:
			return fmt.Sprintf(k.want, s, oneOf(k.values))
		}
	case k.min != nil && f.Kind() == reflect.Int64:
		n := f.Int()
		switch {
		case k.max != nil && (n < *k.min || n > *k.max):
			return fmt.Sprintf("%d out of range [%d, %d]", n, *k.min, *k.max)
		case k.max == nil && n < *k.min && *k.min == 0:
			return fmt.Sprintf("%d must not be negative", n)
		case n < *k.min:
			return fmt.Sprintf("%d must be at least %d", n, *k.min)
		}
	}
	return ""
}

// oneOf lists values as "a, b or c".
func oneOf(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
