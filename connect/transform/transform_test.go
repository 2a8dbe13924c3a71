package transform_test

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/transform"
)

var meta = transform.Meta{
	Topic: "orders", Partition: 3, Offset: 42,
	Timestamp: time.UnixMilli(1788470104123).In(time.FixedZone("X", 3600)),
	Key:       []byte("k-1"),
	Headers:   []transform.Header{{Key: "trace", Value: []byte("old")}, {Key: "trace", Value: []byte("t-9")}, {Key: "bin", Value: []byte{0xff}}},
}

func ptr[T any](v T) *T { return &v }

func chain(t *testing.T, specs ...transform.Spec) *transform.Chain {
	t.Helper()
	c, i, err := transform.Compile(specs)
	if err != nil {
		t.Fatalf("spec %d: %v", i, err)
	}
	return c
}

func TestApply(t *testing.T) {
	const rec = `{"id": 12345678901234567890, "price": 12.340, "name": "a\"b", "nested": {"x": 1, "y": {"z": true}}, "tags": [1, 2], "op": "u"}`
	for _, tc := range []struct {
		name  string
		specs []transform.Spec
		in    string
		want  string // "" when dropped
	}{
		{"add static values of every kind", []transform.Spec{{Type: transform.AddFields, Fields: []transform.Field{
			{Name: "s", Value: "shop <1>", HasValue: true}, {Name: "i", Value: int64(-7), HasValue: true},
			{Name: "f", Value: 0.1, HasValue: true}, {Name: "b", Value: false, HasValue: true},
			{Name: "a", Value: []any{int64(1), "x"}, HasValue: true}, {Name: "t", Value: map[string]any{"z": int64(1), "a": int64(2)}, HasValue: true},
			{Name: "d", Value: time.Date(2026, 9, 3, 21, 15, 4, 0, time.UTC), HasValue: true},
		}}}, `{"id":1}`, `{"id":1,"s":"shop <1>","i":-7,"f":0.1,"b":false,"a":[1,"x"],"t":{"a":2,"z":1},"d":"2026-09-03T21:15:04Z"}`},
		{"add computed", []transform.Spec{{Type: transform.AddFields, Fields: []transform.Field{
			{Name: "ms", Compute: "timestamp_ms"}, {Name: "ts", Compute: "timestamp_rfc3339"}, {Name: "topic", Compute: "topic"},
			{Name: "p", Compute: "partition"}, {Name: "o", Compute: "offset"}, {Name: "k", Compute: "key"}, {Name: "k64", Compute: "key_base64"},
			{Name: "trace", Header: "trace"}, {Name: "none", Header: "absent"},
		}}}, `{}`, `{"ms":1788470104123,"ts":"2026-09-03T21:15:04.123Z","topic":"orders","p":3,"o":42,"k":"k-1","k64":"ay0x","trace":"t-9","none":null}`},
		{"names with escapes", []transform.Spec{{Type: transform.AddFields, Fields: []transform.Field{{Name: "q\"<", Value: int64(2), HasValue: true}}},
			{Type: transform.UpdateFields, Field: "é", RenameTo: "e\n"}}, `{"q\"<":1,"\u00e9":3}`, `{"q\"<":2,"e\n":3}`},
		{"add replaces an existing field in place", []transform.Spec{{Type: transform.AddFields, Fields: []transform.Field{{Name: "name", Value: "n", HasValue: true}}}},
			`{"a":1,"name":"x","b":2}`, `{"a":1,"name":"n","b":2}`},
		{"numbers and nested bytes stay as written", []transform.Spec{{Type: transform.DeleteFields, Paths: []string{"op"}}}, rec,
			`{"id":12345678901234567890,"price":12.340,"name":"a\"b","nested":{"x": 1, "y": {"z": true}},"tags":[1, 2]}`},
		{"delete top level and nested, missing ignored", []transform.Spec{{Type: transform.DeleteFields, Paths: []string{"tags", "nested.y.z", "nested.q", "gone.x"}}}, rec,
			`{"id":12345678901234567890,"price":12.340,"name":"a\"b","nested":{"x":1,"y":{}},"op":"u"}`},
		{"delete under null is nothing", []transform.Spec{{Type: transform.DeleteFields, Paths: []string{"n.x"}}}, `{"n":null}`, `{"n":null}`},
		{"delete every duplicate", []transform.Spec{{Type: transform.DeleteFields, Paths: []string{"a"}}}, `{"a":1,"b":2,"a":3}`, `{"b":2}`},
		{"rename keeps position", []transform.Spec{{Type: transform.UpdateFields, Field: "name", RenameTo: "title"}}, `{"a":1,"name":"x","b":2}`, `{"a":1,"title":"x","b":2}`},
		{"rename replaces the field of that name", []transform.Spec{{Type: transform.UpdateFields, Field: "a", RenameTo: "b"}}, `{"a":1,"b":2,"c":3}`, `{"b":1,"c":3}`},
		{"rename nested and set", []transform.Spec{{Type: transform.UpdateFields, Field: "nested.x", RenameTo: "w", Value: "v", HasValue: true}}, rec,
			`{"id":12345678901234567890,"price":12.340,"name":"a\"b","nested":{"w":"v","y":{"z": true}},"tags":[1, 2],"op":"u"}`},
		{"update missing skipped", []transform.Spec{{Type: transform.UpdateFields, Field: "q", Value: int64(1), HasValue: true}}, `{"a":1}`, `{"a":1}`},
		{"filter_fields keeps listed in record order", []transform.Spec{{Type: transform.FilterFields, Paths: []string{"op", "id", "nope"}}}, rec,
			`{"id":12345678901234567890,"op":"u"}`},
		{"filter equals string keeps", []transform.Spec{{Type: transform.FilterRecords, Field: "op", Equals: "u", HasEquals: true}}, `{"op":"u"}`, `{"op":"u"}`},
		{"filter equals string drops", []transform.Spec{{Type: transform.FilterRecords, Field: "op", Equals: "u", HasEquals: true}}, `{"op":"d"}`, ""},
		{"filter equals escaped string", []transform.Spec{{Type: transform.FilterRecords, Field: "op", Equals: "é", HasEquals: true}}, `{"op":"\u00e9"}`, `{"op":"\u00e9"}`},
		{"filter number exact: 1.0 equals 1", []transform.Spec{{Type: transform.FilterRecords, Field: "n", Equals: int64(1), HasEquals: true}}, `{"n":1.0}`, `{"n":1.0}`},
		{"filter float 0.1 is decimal 0.1", []transform.Spec{{Type: transform.FilterRecords, Field: "n", Equals: 0.1, HasEquals: true}}, `{"n":1e-1}`, `{"n":1e-1}`},
		{"filter big number not equal", []transform.Spec{{Type: transform.FilterRecords, Field: "n", Equals: int64(9007199254740993), HasEquals: true}}, `{"n":9007199254740992}`, ""},
		{"filter string does not equal number", []transform.Spec{{Type: transform.FilterRecords, Field: "n", Equals: "1", HasEquals: true}}, `{"n":1}`, ""},
		{"filter bool", []transform.Spec{{Type: transform.FilterRecords, Field: "a.b", Equals: true, HasEquals: true}}, `{"a":{"b":true}}`, `{"a":{"b":true}}`},
		{"filter in", []transform.Spec{{Type: transform.FilterRecords, Field: "op", In: []any{"c", "u"}}}, `{"op":"c"}`, `{"op":"c"}`},
		{"filter in drop action", []transform.Spec{{Type: transform.FilterRecords, Field: "op", In: []any{"c", "u"}, Action: "drop"}}, `{"op":"c"}`, ""},
		{"filter missing field fails equals", []transform.Spec{{Type: transform.FilterRecords, Field: "op", Equals: "c", HasEquals: true}}, `{}`, ""},
		{"filter present", []transform.Spec{{Type: transform.FilterRecords, Field: "a", Present: ptr(true)}}, `{"a":0}`, `{"a":0}`},
		{"filter null is absent", []transform.Spec{{Type: transform.FilterRecords, Field: "a", Present: ptr(true)}}, `{"a":null}`, ""},
		{"filter absent", []transform.Spec{{Type: transform.FilterRecords, Field: "a.b", Present: ptr(false)}}, `{"a":{}}`, `{"a":{}}`},
		{"unwrap after", []transform.Spec{{Type: transform.UnwrapEnvelope, Field: "after"}}, `{"before":null,"after":{"id":1,"v":"x"},"op":"c"}`, `{"id":1,"v":"x"}`},
		{"unwrap nested path", []transform.Spec{{Type: transform.UnwrapEnvelope, Field: "payload.after"}}, `{"payload":{"after":{"z":1,"a":2}}}`, `{"z":1,"a":2}`},
		{"unwrap null dropped", []transform.Spec{{Type: transform.UnwrapEnvelope, Field: "after"}}, `{"after":null,"op":"d"}`, ""},
		{"chain runs in order", []transform.Spec{
			{Type: transform.UnwrapEnvelope, Field: "after"},
			{Type: transform.UpdateFields, Field: "id", RenameTo: "order_id"},
			{Type: transform.AddFields, Fields: []transform.Field{{Name: "offset", Compute: "offset"}}},
		}, `{"after":{"id":7}}`, `{"order_id":7,"offset":42}`},
		{"whitespace around the top level", []transform.Spec{{Type: transform.DeleteFields, Paths: []string{"x"}}}, " \n{ \"a\" : 1 , \"x\":2 }\t", `{"a":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chain(t, tc.specs...)
			out, keep, err := c.Apply([]byte("prefix:"), []byte(tc.in), &meta)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if keep || string(out) != "prefix:" {
					t.Fatalf("want dropped, got keep=%v %s", keep, out)
				}
				return
			}
			if !keep || string(out) != "prefix:"+tc.want {
				t.Fatalf("got keep=%v\n %s\nwant\n %s", keep, out, "prefix:"+tc.want)
			}
		})
	}
}

func TestUUID(t *testing.T) {
	c := chain(t, transform.Spec{Type: transform.AddFields, Fields: []transform.Field{{Name: "id", Compute: "uuid"}}})
	re := regexp.MustCompile(`^\{"id":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"\}$`)
	a, _, _ := c.Apply(nil, []byte(`{}`), &meta)
	b, _, _ := c.Apply(nil, []byte(`{}`), &meta)
	if !re.Match(a) || !re.Match(b) || string(a) == string(b) {
		t.Fatalf("not two random v4 UUIDs: %s %s", a, b)
	}
}

func TestRecordErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    transform.Spec
		in      string
		notJSON bool
		want    string
	}{
		{"not JSON", transform.Spec{Type: transform.DeleteFields, Paths: []string{"a"}}, `{"a":`, true, "does not parse"},
		{"trailing garbage", transform.Spec{Type: transform.DeleteFields, Paths: []string{"a"}}, `{"a":1} x`, true, "does not parse"},
		{"not an object", transform.Spec{Type: transform.DeleteFields, Paths: []string{"a"}}, `[1]`, false, "not a JSON object"},
		{"a scalar", transform.Spec{Type: transform.DeleteFields, Paths: []string{"a"}}, `"s"`, false, "not a JSON object"},
		{"delete through a string", transform.Spec{Type: transform.DeleteFields, Paths: []string{"a.b"}}, `{"a":"s"}`, false, `path "a.b": field "a" is a string, not an object`},
		{"delete deep through an array", transform.Spec{Type: transform.DeleteFields, Paths: []string{"a.b.c"}}, `{"a":{"b":[1]}}`, false, `under a: field "b" is an array`},
		{"update missing with error", transform.Spec{Type: transform.UpdateFields, Field: "x.y", RenameTo: "z", IfMissing: "error"}, `{"x":{}}`, false, `field "x.y" is missing`},
		{"filter through a number", transform.Spec{Type: transform.FilterRecords, Field: "a.b", Present: ptr(true)}, `{"a":1}`, false, `field "a" is a number`},
		{"unwrap missing", transform.Spec{Type: transform.UnwrapEnvelope, Field: "after"}, `{"before":{}}`, false, `envelope field "after" is missing`},
		{"unwrap not an object", transform.Spec{Type: transform.UnwrapEnvelope, Field: "after"}, `{"after":[1]}`, false, `is an array, not an object`},
		{"unwrap null as error", transform.Spec{Type: transform.UnwrapEnvelope, Field: "after", OnNull: "error"}, `{"after":null}`, false, `is null (on_null = "error")`},
		{"key not UTF-8", transform.Spec{Type: transform.AddFields, Fields: []transform.Field{{Name: "k", Compute: "key"}}}, `{}`, false, "key is not valid UTF-8"},
		{"header not UTF-8", transform.Spec{Type: transform.AddFields, Fields: []transform.Field{{Name: "h", Header: "bin"}}}, `{}`, false, `header "bin" is not valid UTF-8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chain(t, transform.Spec{Type: transform.FilterFields, Paths: []string{"a", "x", "after", "before"}}, tc.spec)
			if tc.spec.Type == transform.FilterRecords || tc.spec.Type == transform.AddFields {
				c = chain(t, tc.spec)
			}
			m := meta
			m.Key = []byte{0xc3, 0x28}
			out, keep, err := c.Apply([]byte("p"), []byte(tc.in), &m)
			var re *transform.RecordError
			if !errors.As(err, &re) || keep || string(out) != "p" {
				t.Fatalf("want a *RecordError, got %v keep=%v out=%q", err, keep, out)
			}
			if re.NotJSON != tc.notJSON || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (notJSON %v), want %q (notJSON %v)", err, re.NotJSON, tc.want, tc.notJSON)
			}
			if !tc.notJSON && tc.want != "not a JSON object" && re.Step != c.Len() {
				t.Fatalf("step %d, want %d", re.Step, c.Len())
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec transform.Spec
		key  string
		want string
	}{
		{"unknown type", transform.Spec{Type: "mask_fields"}, "type", `"mask_fields": want one of`},
		{"key of another type", transform.Spec{Type: transform.DeleteFields, Paths: []string{"a"}, Field: "b"}, "field", `does not apply to type = "delete_fields"`},
		{"no paths", transform.Spec{Type: transform.DeleteFields, Paths: []string{}}, "paths", "missing"},
		{"empty segment", transform.Spec{Type: transform.DeleteFields, Paths: []string{"a..b"}}, "paths", `"a..b": want a field name`},
		{"filter_fields nested", transform.Spec{Type: transform.FilterFields, Paths: []string{"a.b"}}, "paths", "top-level fields only"},
		{"add nothing", transform.Spec{Type: transform.AddFields}, "fields", "missing"},
		{"add without name", transform.Spec{Type: transform.AddFields, Fields: []transform.Field{{Compute: "uuid"}}}, "fields[1].name", "missing"},
		{"add two sources", transform.Spec{Type: transform.AddFields, Fields: []transform.Field{{Name: "a", Compute: "uuid", Header: "h"}}}, "fields[1]", "exactly one of"},
		{"add unknown compute", transform.Spec{Type: transform.AddFields, Fields: []transform.Field{{Name: "a", Compute: "now"}}}, "fields[1].compute", `"now": want one of`},
		{"update without field", transform.Spec{Type: transform.UpdateFields, RenameTo: "b"}, "field", "missing"},
		{"update doing nothing", transform.Spec{Type: transform.UpdateFields, Field: "a"}, "", "rename_to, value or both"},
		{"update bad if_missing", transform.Spec{Type: transform.UpdateFields, Field: "a", RenameTo: "b", IfMissing: "add"}, "if_missing", "want skip or error"},
		{"filter two tests", transform.Spec{Type: transform.FilterRecords, Field: "a", Equals: "x", HasEquals: true, Present: ptr(true)}, "", "exactly one test"},
		{"filter no test", transform.Spec{Type: transform.FilterRecords, Field: "a"}, "", "exactly one test"},
		{"filter empty in", transform.Spec{Type: transform.FilterRecords, Field: "a", In: []any{}}, "in", "empty"},
		{"filter table value", transform.Spec{Type: transform.FilterRecords, Field: "a", In: []any{"x", map[string]any{}}}, "in[2]", "want a string, a number or a boolean"},
		{"filter bad action", transform.Spec{Type: transform.FilterRecords, Field: "a", Present: ptr(true), Action: "pass"}, "action", "want keep or drop"},
		{"unwrap bad on_null", transform.Spec{Type: transform.UnwrapEnvelope, Field: "a", OnNull: "skip"}, "on_null", "want drop or error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, i, err := transform.Compile([]transform.Spec{{Type: transform.DeleteFields, Paths: []string{"x"}}, tc.spec})
			var se *transform.SpecError
			if !errors.As(err, &se) || i != 1 {
				t.Fatalf("want a *SpecError of spec 1, got %v (spec %d)", err, i)
			}
			if se.Key != tc.key || !strings.Contains(se.Msg, tc.want) {
				t.Fatalf("got key %q msg %q, want key %q msg containing %q", se.Key, se.Msg, tc.key, tc.want)
			}
		})
	}
}

// One chain serves every batch of a block at once (max_in_flight): run it
// from several goroutines, under -race in make unit.
func TestConcurrentApply(t *testing.T) {
	c := chain(t,
		transform.Spec{Type: transform.UnwrapEnvelope, Field: "after"},
		transform.Spec{Type: transform.DeleteFields, Paths: []string{"n.x"}},
		transform.Spec{Type: transform.AddFields, Fields: []transform.Field{{Name: "o", Compute: "offset"}}},
	)
	done := make(chan string)
	for g := range 4 {
		go func() {
			m := meta
			m.Offset = int64(g)
			var out []byte
			for range 500 {
				var err error
				if out, _, err = c.Apply(out[:0], []byte(`{"after":{"n":{"x":1,"y":2},"id":"a"}}`), &m); err != nil {
					done <- err.Error()
					return
				}
			}
			done <- string(out)
		}()
	}
	for range 4 {
		got := <-done
		if !strings.HasPrefix(got, `{"n":{"y":2},"id":"a","o":`) {
			t.Errorf("got %s", got)
		}
	}
}

// A TOML float stays a JSON float (a column inferred from it is a double,
// not a long), nested ones too; an integer stays an integer.
func TestStaticFloatsKeepTheirPoint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value any
		want  string
	}{
		{"whole float", 2.0, `2.0`},
		{"negative whole float", -3.0, `-3.0`},
		{"zero", 0.0, `0.0`},
		{"negative zero", math.Copysign(0, -1), `-0.0`},
		{"fraction", 2.5, `2.5`},
		{"small", 1e-7, `1e-7`},
		{"large whole float", 1e20, `100000000000000000000.0`},
		{"huge", 1e21, `1e+21`},
		{"integer", int64(2), `2`},
		{"in an array", []any{1.0, int64(1), "1.0"}, `[1.0,1,"1.0"]`},
		{"in a table", map[string]any{"b": 4.0, "a": []any{map[string]any{"x": 7.0}}}, `{"a":[{"x":7.0}],"b":4.0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, sp := range []transform.Spec{
				{Type: transform.AddFields, Fields: []transform.Field{{Name: "v", Value: tc.value, HasValue: true}}},
				{Type: transform.UpdateFields, Field: "v", Value: tc.value, HasValue: true},
			} {
				out, _, err := chain(t, sp).Apply(nil, []byte(`{"v":null}`), &meta)
				if err != nil {
					t.Fatal(err)
				}
				if want := `{"v":` + tc.want + `}`; string(out) != want {
					t.Fatalf("%s: got %s, want %s", sp.Type, out, want)
				}
			}
		})
	}
}

// A filter_records that drops a record for want of its field (a
// misspelled field drops them all) says so once, naming its position and
// field; drops for a value that does not match, and absent fields that
// are kept, say nothing.
func TestFilterNoticeOnAbsentField(t *testing.T) {
	c := chain(t,
		transform.Spec{Type: transform.DeleteFields, Paths: []string{"x"}},
		transform.Spec{Type: transform.FilterRecords, Field: "a.b", Present: ptr(false)},              // absent: kept
		transform.Spec{Type: transform.FilterRecords, Field: "status", Equals: "ok", HasEquals: true}, // action keep
	)
	apply := func(in string) bool {
		_, keep, err := c.Apply(nil, []byte(in), &meta)
		if err != nil {
			t.Fatal(err)
		}
		return keep
	}
	if apply(`{"status":"bad"}`) || !apply(`{"status":"ok"}`) {
		t.Fatal("filter did not filter")
	}
	if n := c.Notices(); len(n) != 0 {
		t.Fatalf("notices after drops by value: %q", n)
	}
	if apply(`{"stauts":"ok"}`) || apply(`{"status":null}`) {
		t.Fatal("a record without status was kept")
	}
	n := c.Notices()
	if len(n) != 1 || n[0] != `transform 3 (filter_records) dropped a record whose field "status" is missing or null; if the field is misspelled, it drops every record (told once)` {
		t.Fatalf("notices: %q", n)
	}
	apply(`{}`)
	if n := c.Notices(); len(n) != 0 {
		t.Fatalf("told twice: %q", n)
	}
}
