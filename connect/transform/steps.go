package transform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// compile checks one spec: the keys its type takes, and no other.
func compile(sp Spec) (step, error) {
	set := map[string]bool{
		"fields": sp.Fields != nil, "paths": sp.Paths != nil, "field": sp.Field != "", "rename_to": sp.RenameTo != "",
		"value": sp.HasValue, "if_missing": sp.IfMissing != "", "equals": sp.HasEquals, "in": sp.In != nil,
		"present": sp.Present != nil, "action": sp.Action != "", "on_null": sp.OnNull != "",
	}
	takes := map[Type][]string{
		AddFields:      {"fields"},
		DeleteFields:   {"paths"},
		UpdateFields:   {"field", "rename_to", "value", "if_missing"},
		FilterFields:   {"paths"},
		FilterRecords:  {"field", "equals", "in", "present", "action"},
		UnwrapEnvelope: {"field", "on_null"},
	}[sp.Type]
	if takes == nil {
		return nil, &SpecError{Key: "type", Msg: fmt.Sprintf("%q: want one of %v", sp.Type, Types)}
	}
	for _, k := range []string{"fields", "paths", "field", "rename_to", "value", "if_missing", "equals", "in", "present", "action", "on_null"} {
		if set[k] && !slices.Contains(takes, k) {
			return nil, &SpecError{Key: k, Msg: fmt.Sprintf("does not apply to type = %q (it takes %v)", sp.Type, takes)}
		}
	}
	switch sp.Type {
	case AddFields:
		return compileAdd(sp)
	case DeleteFields, FilterFields:
		if len(sp.Paths) == 0 {
			return nil, &SpecError{Key: "paths", Msg: fmt.Sprintf("missing: %s needs the fields it acts on, such as paths = [\"a\", \"b\"]", sp.Type)}
		}
		var paths [][]string
		for _, p := range sp.Paths {
			parts, err := splitPath("paths", p)
			if err != nil {
				return nil, err
			}
			if sp.Type == FilterFields && len(parts) > 1 {
				return nil, &SpecError{Key: "paths", Msg: fmt.Sprintf("%q: filter_fields keeps top-level fields only", p)}
			}
			paths = append(paths, parts)
		}
		if sp.Type == FilterFields {
			return filterFields(sp.Paths), nil
		}
		return deleteFields(paths), nil
	case UpdateFields:
		return compileUpdate(sp)
	case FilterRecords:
		return compileFilter(sp)
	}
	return compileUnwrap(sp)
}

func requiredField(sp Spec) ([]string, error) {
	if sp.Field == "" {
		return nil, &SpecError{Key: "field", Msg: fmt.Sprintf("missing: %s needs the field it acts on, such as field = \"after\"", sp.Type)}
	}
	return splitPath("field", sp.Field)
}

// staticJSON is a TOML value as JSON: tables with their keys sorted (TOML
// tables have no order once read), times as RFC 3339 strings.
func staticJSON(key string, v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(floatsKept(v)); err != nil {
		return nil, &SpecError{Key: key, Msg: fmt.Sprintf("not representable in JSON: %v", err)}
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// floatsKept returns v with each whole float (TOML's 2.0, which
// encoding/json writes as 2) as a json.Number keeping its ".0", so that
// it stays a float for whoever infers a type from the JSON (a new Delta
// column would be long, not double). Other floats are written as
// encoding/json writes them (2.5, 1e-7, 1e+21: floats already).
func floatsKept(v any) any {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1e21 { // also excludes NaN and infinities
			return json.Number(strconv.FormatFloat(t, 'f', -1, 64) + ".0")
		}
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = floatsKept(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = floatsKept(e)
		}
		return out
	}
	return v
}

// --- add_fields

type addField struct {
	name    string
	member  member // the name and its JSON literal, made once
	static  []byte // nil: computed
	compute string
	header  string
}

type addFields []addField

func compileAdd(sp Spec) (step, error) {
	if len(sp.Fields) == 0 {
		return nil, &SpecError{Key: "fields", Msg: `missing: add_fields needs fields = [{ name = "...", value = ... }, ...]`}
	}
	var out addFields
	for i, f := range sp.Fields {
		key := fmt.Sprintf("fields[%d]", i+1)
		n := 0
		for _, b := range []bool{f.HasValue, f.Compute != "", f.Header != ""} {
			if b {
				n++
			}
		}
		switch {
		case f.Name == "":
			return nil, &SpecError{Key: key + ".name", Msg: "missing: the name of the field to add"}
		case n != 1:
			return nil, &SpecError{Key: key, Msg: "set exactly one of value, compute and header"}
		case f.Compute != "" && !slices.Contains(Computes, f.Compute):
			return nil, &SpecError{Key: key + ".compute", Msg: fmt.Sprintf("%q: want one of %v", f.Compute, Computes)}
		}
		a := addField{name: f.Name, member: member{name: []byte(f.Name), lit: jsonw.AppendStringLossy(nil, f.Name)}, compute: f.Compute, header: f.Header}
		if f.HasValue {
			v, err := staticJSON(key+".value", f.Value)
			if err != nil {
				return nil, err
			}
			a.static = v
		}
		out = append(out, a)
	}
	return out, nil
}

func (a addFields) apply(s *state, m *Meta) (bool, error) {
	for _, f := range a {
		v := f.static
		if v == nil {
			start := len(s.arena)
			var err error
			if s.arena, err = f.appendComputed(s.arena, m); err != nil {
				return false, err
			}
			v = s.arena[start:len(s.arena):len(s.arena)]
		}
		s.o.set(f.member, v)
	}
	return true, nil
}

// rfc3339Millis is the record timestamp's form: UTC, milliseconds, as the
// decoders write millisecond timestamps (docs/decode.md).
const rfc3339Millis = "2006-01-02T15:04:05.000Z07:00"

func (f *addField) appendComputed(dst []byte, m *Meta) ([]byte, error) {
	if f.header != "" {
		for i := len(m.Headers) - 1; i >= 0; i-- {
			if h := m.Headers[i]; h.Key == f.header {
				out, ok := jsonw.AppendString(dst, h.Value)
				if !ok {
					return dst, fmt.Errorf("header %q is not valid UTF-8 (field %q)", f.header, f.name)
				}
				return out, nil
			}
		}
		return append(dst, "null"...), nil
	}
	switch f.compute {
	case "timestamp_ms":
		return strconv.AppendInt(dst, m.Timestamp.UnixMilli(), 10), nil
	case "timestamp_rfc3339":
		dst = append(dst, '"')
		dst = m.Timestamp.UTC().AppendFormat(dst, rfc3339Millis)
		return append(dst, '"'), nil
	case "topic":
		return jsonw.AppendStringLossy(dst, m.Topic), nil
	case "partition":
		return strconv.AppendInt(dst, int64(m.Partition), 10), nil
	case "offset":
		return strconv.AppendInt(dst, m.Offset, 10), nil
	case "key", "key_base64":
		switch {
		case m.Key == nil:
			return append(dst, "null"...), nil
		case f.compute == "key_base64":
			return jsonw.AppendBase64(dst, m.Key), nil
		}
		out, ok := jsonw.AppendString(dst, m.Key)
		if !ok {
			return dst, fmt.Errorf("the record key is not valid UTF-8 (field %q; compute = \"key_base64\" takes any key)", f.name)
		}
		return out, nil
	}
	id, err := uuid.NewRandom()
	if err != nil {
		return dst, fmt.Errorf("uuid: %w", err) // the system's random source failed
	}
	dst = append(dst, '"')
	dst = append(dst, id.String()...)
	return append(dst, '"'), nil
}

// --- delete_fields, filter_fields

type deleteFields [][]string

func (d deleteFields) apply(s *state, _ *Meta) (bool, error) {
	for _, p := range d {
		_, err := modify(s, &s.o, p, func(parent *object, name string) (bool, error) {
			return parent != nil && parent.remove(name), nil
		})
		if err != nil {
			return false, fmt.Errorf("path %q: %w", joinPath(p), err)
		}
	}
	return true, nil
}

type filterFields []string

func (f filterFields) apply(s *state, _ *Meta) (bool, error) {
	ms := s.o.members[:0]
	for _, m := range s.o.members {
		if slices.ContainsFunc(f, func(k string) bool { return k == string(m.name) }) {
			ms = append(ms, m)
		}
	}
	clear(s.o.members[len(ms):])
	s.o.members = ms
	return true, nil
}

// --- update_fields

type updateField struct {
	path     []string
	renameTo string
	rename   []byte // renameTo, as a member's name
	value    []byte // nil: keep the value
	mustHave bool
}

func compileUpdate(sp Spec) (step, error) {
	path, err := requiredField(sp)
	if err != nil {
		return nil, err
	}
	u := updateField{path: path, renameTo: sp.RenameTo, rename: []byte(sp.RenameTo)}
	switch sp.IfMissing {
	case "", "skip":
	case "error":
		u.mustHave = true
	default:
		return nil, &SpecError{Key: "if_missing", Msg: fmt.Sprintf("%q: want skip or error", sp.IfMissing)}
	}
	if sp.HasValue {
		if u.value, err = staticJSON("value", sp.Value); err != nil {
			return nil, err
		}
	}
	if u.value == nil && u.renameTo == "" {
		return nil, &SpecError{Msg: "update_fields needs rename_to, value or both"}
	}
	return &u, nil
}

func (u *updateField) apply(s *state, _ *Meta) (bool, error) {
	_, err := modify(s, &s.o, u.path, func(parent *object, name string) (bool, error) {
		i := -1
		if parent != nil {
			i = parent.find(name)
		}
		if i < 0 {
			if u.mustHave {
				return false, fmt.Errorf("field %q is missing (if_missing = \"error\")", joinPath(u.path))
			}
			return false, nil
		}
		if u.value != nil {
			parent.members[i].value = u.value
		}
		if u.renameTo != "" && u.renameTo != name {
			// The renamed field takes the place of any field already
			// called renameTo.
			parent.members[i].name, parent.members[i].lit = u.rename, nil
			ms := parent.members[:0]
			for j, m := range parent.members {
				if j == i || string(m.name) != u.renameTo {
					ms = append(ms, m)
				}
			}
			parent.members = ms
		}
		return true, nil
	})
	return true, err
}

// --- filter_records

type filterRecords struct {
	path    []string
	present *bool
	values  []matcher // equals (one) or in (several)
	drop    bool      // action = "drop": the records that pass are dropped

	// absent is set by the first record dropped because the field is
	// missing or null (a misspelled field drops every record), told once
	// by Chain.Notices.
	absent, told atomic.Bool
	step         int // 1-based position in the chain, for the notice
}

// matcher is a value filter_records compares with: a string, an exact
// number or a boolean.
type matcher struct {
	str  *string
	num  *big.Rat
	text string // the number as written in the definition's canonical form
	b    *bool
}

func compileFilter(sp Spec) (step, error) {
	path, err := requiredField(sp)
	if err != nil {
		return nil, err
	}
	f := &filterRecords{path: path, present: sp.Present}
	n := 0
	if sp.HasEquals {
		n++
		m, err := newMatcher("equals", sp.Equals)
		if err != nil {
			return nil, err
		}
		f.values = []matcher{m}
	}
	if sp.In != nil {
		n++
		if len(sp.In) == 0 {
			return nil, &SpecError{Key: "in", Msg: "empty: list the values that pass"}
		}
		for i, v := range sp.In {
			m, err := newMatcher(fmt.Sprintf("in[%d]", i+1), v)
			if err != nil {
				return nil, err
			}
			f.values = append(f.values, m)
		}
	}
	if sp.Present != nil {
		n++
	}
	if n != 1 {
		return nil, &SpecError{Msg: "filter_records needs exactly one test: equals, in or present"}
	}
	switch sp.Action {
	case "", "keep":
	case "drop":
		f.drop = true
	default:
		return nil, &SpecError{Key: "action", Msg: fmt.Sprintf("%q: want keep or drop", sp.Action)}
	}
	return f, nil
}

func newMatcher(key string, v any) (matcher, error) {
	switch v := v.(type) {
	case string:
		return matcher{str: &v}, nil
	case bool:
		return matcher{b: &v}, nil
	case int64:
		return matcher{num: new(big.Rat).SetInt64(v), text: strconv.FormatInt(v, 10)}, nil
	case float64:
		// The shortest decimal that is this float: 0.1 matches a
		// record's 0.1, not the binary 0.1000000000000000055….
		t := strconv.FormatFloat(v, 'g', -1, 64)
		r, ok := new(big.Rat).SetString(t)
		if !ok {
			return matcher{}, &SpecError{Key: key, Msg: fmt.Sprintf("%v: not a finite number", v)}
		}
		return matcher{num: r, text: t}, nil
	}
	return matcher{}, &SpecError{Key: key, Msg: fmt.Sprintf("a %T: want a string, a number or a boolean", v)}
}

// matches compares a record's JSON value: strings after unescaping,
// numbers by exact value (1, 1.0 and 1e0 are equal), booleans; null,
// arrays and objects match nothing.
func (m *matcher) matches(v []byte) bool {
	switch {
	case m.str != nil:
		if len(v) == 0 || v[0] != '"' {
			return false
		}
		s, ok := decodeString(v)
		return ok && s == *m.str
	case m.b != nil:
		return string(v) == strconv.FormatBool(*m.b)
	}
	if len(v) == 0 || v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return false
	}
	if string(v) == m.text {
		return true
	}
	r, ok := new(big.Rat).SetString(string(v))
	return ok && r.Cmp(m.num) == 0
}

func (f *filterRecords) apply(s *state, _ *Meta) (bool, error) {
	v, found, err := get(s, f.path)
	if err != nil {
		return false, err
	}
	found = found && string(v) != "null"
	var pass bool
	if f.present != nil {
		pass = found == *f.present
	} else if found {
		for i := range f.values {
			if f.values[i].matches(v) {
				pass = true
				break
			}
		}
	}
	keep := pass != f.drop
	if !keep && !found && !f.absent.Load() {
		f.absent.Store(true)
	}
	return keep, nil
}

// notice is the warning of the first record f dropped because its field
// is absent, once: "" before such a record and after it was told.
func (f *filterRecords) notice() string {
	if !f.absent.Load() || !f.told.CompareAndSwap(false, true) {
		return ""
	}
	return fmt.Sprintf("transform %d (filter_records) dropped a record whose field %q is missing or null; if the field is misspelled, it drops every record (told once)",
		f.step, strings.Join(f.path, "."))
}

// --- unwrap_envelope

type unwrapEnvelope struct {
	path     []string
	nullStop bool // on_null = "error"
}

func compileUnwrap(sp Spec) (step, error) {
	path, err := requiredField(sp)
	if err != nil {
		return nil, err
	}
	u := &unwrapEnvelope{path: path}
	switch sp.OnNull {
	case "", "drop":
	case "error":
		u.nullStop = true
	default:
		return nil, &SpecError{Key: "on_null", Msg: fmt.Sprintf("%q: want drop or error", sp.OnNull)}
	}
	return u, nil
}

func (u *unwrapEnvelope) apply(s *state, _ *Meta) (bool, error) {
	v, found, err := get(s, u.path)
	switch {
	case err != nil:
		return false, err
	case !found:
		return false, fmt.Errorf("envelope field %q is missing", joinPath(u.path))
	case string(v) == "null" && u.nullStop:
		return false, fmt.Errorf("envelope field %q is null (on_null = \"error\")", joinPath(u.path))
	case string(v) == "null":
		return false, nil
	}
	var inner object
	if _, isObj := parseObjectInto(v, &inner, &s.arena); !isObj {
		return false, fmt.Errorf("envelope field %q is %s, not an object", joinPath(u.path), kindOf(v))
	}
	s.o.members = append(s.o.members[:0], inner.members...)
	return true, nil
}
