package decodetest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// Fits reports why doc, the JSON of one record, does not have the type
// schema (a value schema) declares: every key of an object is a field of
// its struct, in the struct's order; every value fits its field's type
// (null only where nullable); integers in range; decimals exact at the
// scale; timestamps, dates and base64 in the forms docs/decode.md gives. A
// string type takes any non-null JSON (the Delta sink writes an object's
// text into a string column: recursive Avro records, Protobuf Struct).
func Fits(schema []byte, doc []byte) error {
	t, err := decode.ParseSchema(schema)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return err
	}
	// Key order is lost in a map: check it on the raw JSON.
	return fits("", t, false, v, json.RawMessage(doc))
}

var (
	decimalRe = regexp.MustCompile(`^decimal\((\d+),(\d+)\)$`)
	intRanges = map[string][2]int64{"long": {math.MinInt64, math.MaxInt64}, "integer": {math.MinInt32, math.MaxInt32},
		"short": {math.MinInt16, math.MaxInt16}, "byte": {math.MinInt8, math.MaxInt8}}
)

func fits(path string, t *decode.Type, nullable bool, v any, raw json.RawMessage) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	if v == nil {
		if !nullable {
			return fail("null in a non-nullable %s", t.Name)
		}
		return nil
	}
	switch t.Name {
	case "struct":
		obj, ok := v.(map[string]any)
		if !ok {
			return fail("%T for a struct", v)
		}
		keys, raws, err := orderedKeys(raw)
		if err != nil {
			return fail("%v", err)
		}
		next := 0
		for i, k := range keys {
			j := next
			for j < len(t.Fields) && t.Fields[j].Name != k {
				j++
			}
			if j == len(t.Fields) {
				return fail("key %q is no field of the struct, or out of order", k)
			}
			f := t.Fields[j]
			if err := fits(path+"."+k, f.Type, f.Nullable, obj[k], raws[i]); err != nil {
				return err
			}
			next = j + 1
		}
		return nil
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return fail("%T for an array", v)
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(raw, &raws); err != nil {
			return fail("%v", err)
		}
		for i, e := range arr {
			if err := fits(fmt.Sprintf("%s[%d]", path, i), t.Elem, t.ElemNullable, e, raws[i]); err != nil {
				return err
			}
		}
		return nil
	case "map":
		obj, ok := v.(map[string]any)
		if !ok {
			return fail("%T for a map", v)
		}
		var raws map[string]json.RawMessage
		if err := json.Unmarshal(raw, &raws); err != nil {
			return fail("%v", err)
		}
		for k, e := range obj {
			if err := fits(path+"."+k, t.Elem, t.ElemNullable, e, raws[k]); err != nil {
				return err
			}
		}
		return nil
	case "string":
		return nil
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fail("%v for a boolean", v)
		}
		return nil
	case "float", "double":
		switch x := v.(type) {
		case json.Number:
			return nil
		case string:
			if x == "NaN" || x == "Infinity" || x == "-Infinity" {
				return nil
			}
		}
		return fail("%v for a %s", v, t.Name)
	}
	if r, ok := intRanges[t.Name]; ok {
		n, isNum := v.(json.Number)
		i, err := strconv.ParseInt(string(n), 10, 64)
		if !isNum || err != nil || i < r[0] || i > r[1] {
			return fail("%v is not a %s", v, t.Name)
		}
		return nil
	}
	s, ok := v.(string)
	if !ok {
		if n, isNum := v.(json.Number); isNum && strings.HasPrefix(t.Name, "decimal(") && !strings.ContainsAny(string(n), ".eE") {
			s = string(n) // an integer fits a decimal(20,0)
		} else {
			return fail("%v (%T) for a %s", v, v, t.Name)
		}
	}
	switch t.Name {
	case "binary":
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			return fail("%q is not base64", s)
		}
	case "date":
		if _, err := time.Parse("2006-01-02", s); err != nil {
			return fail("%q is not a date", s)
		}
	case "timestamp":
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil || !strings.HasSuffix(s, "Z") {
			return fail("%q is not an RFC 3339 UTC timestamp", s)
		}
	case "timestamp_ntz":
		if _, err := time.Parse("2006-01-02T15:04:05.999999999", s); err != nil {
			return fail("%q is not a timestamp without zone", s)
		}
	default:
		m := decimalRe.FindStringSubmatch(t.Name)
		if m == nil {
			return fail("unknown type %q", t.Name)
		}
		p, _ := strconv.Atoi(m[1])
		sc, _ := strconv.Atoi(m[2])
		ip, fp, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
		if len(fp) > sc || len(strings.TrimLeft(ip, "0")) > p-sc || strings.Trim(ip+fp, "0123456789") != "" || ip == "" {
			return fail("%q does not fit %s exactly", s, t.Name)
		}
	}
	return nil
}

// orderedKeys returns an object's keys and raw values in document order.
func orderedKeys(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if _, err := d.Token(); err != nil {
		return nil, nil, err
	}
	var keys []string
	var raws []json.RawMessage
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, nil, err
		}
		var r json.RawMessage
		if err := d.Decode(&r); err != nil {
			return nil, nil, err
		}
		keys, raws = append(keys, k.(string)), append(raws, r)
	}
	return keys, raws, nil
}
