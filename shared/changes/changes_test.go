package changes

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	op := &Config{Format: OpField, OpField: "_op", KeyColumns: []string{"id"}}
	dbz := &Config{Format: Debezium, KeyColumns: []string{"tenant", "id"}}
	cases := []struct {
		name       string
		cfg        *Config
		payload    string
		key        string
		hasKey     bool
		wantOp     Op
		wantRow    string
		wantKey    string // key values joined by |
		wantErrSub string
	}{
		{name: "op insert", cfg: op, payload: `{"id":1,"_op":"I","v":"a"}`, wantOp: Upsert, wantRow: `{"id":1,"v":"a"}`, wantKey: "1"},
		{name: "op update lower", cfg: op, payload: ` { "_op" : "u" , "id" : "x\"y" } `, wantOp: Upsert, wantRow: `{"id" : "x\"y"}`, wantKey: `"x\"y"`},
		{name: "op snapshot r", cfg: op, payload: `{"id":2,"_op":"r"}`, wantOp: Upsert, wantRow: `{"id":2}`, wantKey: "2"},
		{name: "op delete", cfg: op, payload: `{"id":3,"_op":"D","v":null}`, wantOp: Delete, wantKey: "3"},
		{name: "op missing", cfg: op, payload: `{"id":3}`, wantErrSub: `no "_op" field`},
		{name: "op unknown", cfg: op, payload: `{"id":3,"_op":"X"}`, wantErrSub: `"X"`},
		{name: "op not string", cfg: op, payload: `{"id":3,"_op":1}`, wantErrSub: "want a string"},
		{name: "null key", cfg: op, payload: `{"id":null,"_op":"I"}`, wantErrSub: `key column "id" is null`},
		{name: "missing key", cfg: op, payload: `{"_op":"I"}`, wantErrSub: `no key column "id"`},
		{name: "object key", cfg: op, payload: `{"id":{"a":1},"_op":"I"}`, wantErrSub: "want a string, number or boolean"},
		{name: "not object", cfg: op, payload: `[1]`, wantErrSub: "not a JSON object"},
		{name: "invalid", cfg: op, payload: `{"id":`, wantErrSub: "not valid JSON"},
		{name: "tombstone", cfg: op, payload: ``, key: `{"id":7}`, hasKey: true, wantOp: Delete, wantKey: "7"},
		{name: "tombstone no key", cfg: op, payload: ``, wantErrSub: "without a record key"},
		{name: "tombstone scalar key", cfg: op, payload: ``, key: `7`, hasKey: true, wantErrSub: "want an object"},
		{name: "dbz create", cfg: dbz, payload: `{"before":null,"after":{"tenant":"t","id":1,"v":2},"op":"c","ts_ms":1}`, wantOp: Upsert, wantRow: `{"tenant":"t","id":1,"v":2}`, wantKey: `"t"|1`},
		{name: "dbz wrapped", cfg: dbz, payload: `{"schema":{"type":"struct"},"payload":{"before":null,"after":{"tenant":"t","id":1},"op":"u"}}`, wantOp: Upsert, wantRow: `{"tenant":"t","id":1}`, wantKey: `"t"|1`},
		{name: "dbz delete before", cfg: dbz, payload: `{"before":{"tenant":"t","id":9,"v":null},"after":null,"op":"d"}`, wantOp: Delete, wantKey: `"t"|9`},
		{name: "dbz delete record key", cfg: dbz, payload: `{"before":null,"after":null,"op":"d"}`, key: `{"schema":{},"payload":{"tenant":"k","id":4}}`, hasKey: true, wantOp: Delete, wantKey: `"k"|4`},
		{name: "dbz delete nothing", cfg: dbz, payload: `{"before":null,"after":null,"op":"d"}`, wantErrSub: "no key to delete"},
		{name: "dbz truncate", cfg: dbz, payload: `{"op":"t"}`, wantErrSub: "truncate"},
		{name: "dbz no op", cfg: dbz, payload: `{"after":{}}`, wantErrSub: `no "op" field`},
		{name: "dbz upsert null after", cfg: dbz, payload: `{"after":null,"op":"c"}`, wantErrSub: `"after" of an upsert`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var key []byte
			if tc.hasKey {
				key = []byte(tc.key)
			}
			ch, err := tc.cfg.Parse([]byte(tc.payload), key)
			if tc.wantErrSub != "" {
				var re *Error
				if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.wantErrSub) {
					t.Fatalf("err = %v, want a record error with %q", err, tc.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ch.Op != tc.wantOp || string(ch.Row) != tc.wantRow {
				t.Fatalf("got %v %s, want %v %s", ch.Op, ch.Row, tc.wantOp, tc.wantRow)
			}
			var ks []string
			for _, k := range ch.Key {
				ks = append(ks, string(k))
			}
			if got := strings.Join(ks, "|"); got != tc.wantKey {
				t.Fatalf("key %s, want %s", got, tc.wantKey)
			}
		})
	}
}

// FuzzParse: Parse never panics, and an upsert's row is a JSON object
// holding the key it reports.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":1,"_op":"I","v":"a"}`), []byte(`{"id":1}`), false)
	f.Add([]byte(`{"schema":{},"payload":{"before":{"id":1},"after":null,"op":"d"}}`), []byte(nil), true)
	f.Add([]byte(``), []byte(`{"id":"x"}`), true)
	f.Fuzz(func(t *testing.T, payload, key []byte, debezium bool) {
		cfg := &Config{Format: OpField, OpField: "_op", KeyColumns: []string{"id"}}
		if debezium {
			cfg.Format = Debezium
		}
		ch, err := cfg.Parse(payload, key)
		if err != nil {
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("not a record error: %v", err)
			}
			return
		}
		if ch.Op == Upsert {
			members, ok := objectMembers(ch.Row)
			if !ok {
				t.Fatalf("row %q is not an object", ch.Row)
			}
			for _, m := range members {
				if !debezium && m.name == "_op" {
					t.Fatalf("row %q keeps the op field", ch.Row)
				}
			}
		}
		if len(ch.Key) != 1 || len(ch.Key[0]) == 0 {
			t.Fatalf("key %q", ch.Key)
		}
	})
}
