package rsemu_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// SUPER columns and JSON_PARSE, the path Redshift documents for putting
// JSON into SUPER with INSERT, from VARCHAR and from VARBYTE.
func TestSuperAndJSONParse(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE src (id INTEGER, b VARBYTE(16777216))`)
	e.exec(t, conn, `CREATE TABLE dst (id INTEGER, doc SUPER)`)
	if got := tableDef(t, e, conn, "dst"); got[0].Column != "doc" || got[0].Type != "super" {
		t.Fatalf("pg_table_def: %+v", got)
	}

	e.exec(t, conn, `INSERT INTO dst VALUES (1, JSON_PARSE('{"a":[1,"x",null],"b":{"c":true}}'))`)
	e.exec(t, conn, `INSERT INTO src VALUES (2, $1)`, []byte(`[{"k":"é"}, 2.5]`))
	e.exec(t, conn, `INSERT INTO dst SELECT id, json_parse(b) FROM src`)
	for id, want := range map[int]string{1: `{"a":[1,"x",null],"b":{"c":true}}`, 2: `[{"k":"é"}, 2.5]`} {
		// The emulator has no JSON_SERIALIZE: its SUPER is jsonb, read as text.
		read := `SELECT doc::text FROM dst WHERE id = $1`
		if e.emu == nil {
			read = `SELECT JSON_SERIALIZE(doc) FROM dst WHERE id = $1`
		}
		var got string
		if err := conn.QueryRow(e.ctx, read, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(want), &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("id %d: got %s, want %s", id, got, want)
		}
	}

	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	for name, doc := range map[string]string{
		"syntax":    `{"a":`,
		"NaN":       `NaN`,
		"duplicate": `{"a":1,"b":{"x":1,"x":2}}`,
		"depth":     deep,
		"string":    `["` + strings.Repeat("x", 65536) + `"]`,
		"empty":     ``,
		"NUL":       `{"a":"x\u0000"}`,
	} {
		t.Run(name, func(t *testing.T) {
			// Through VARBYTE, as the sink stages payloads (and 65536 bytes
			// would not fit a VARCHAR argument).
			e.exec(t, conn, `DELETE FROM src WHERE id = 9`)
			e.exec(t, conn, `INSERT INTO src VALUES (9, $1)`, []byte(doc))
			_, err := conn.Exec(e.ctx, `INSERT INTO dst SELECT id, JSON_PARSE(b) FROM src WHERE id = 9`)
			pgErr(t, err, "XX000", "JSON parsing error")
			if name == "syntax" {
				_, err := conn.Exec(e.ctx, `INSERT INTO dst VALUES (9, JSON_PARSE($1::varchar(max)))`, doc)
				pgErr(t, err, "XX000", "JSON parsing error")
			}
		})
	}
	t.Run("invalid UTF-8", func(t *testing.T) {
		e.exec(t, conn, `INSERT INTO src VALUES (3, $1)`, []byte("\"\xff\""))
		_, err := conn.Exec(e.ctx, `INSERT INTO dst SELECT id, JSON_PARSE(b) FROM src WHERE id = 3`)
		pgErr(t, err, "XX000", "JSON parsing error")
	})
	if n := count(t, e, conn, "dst"); n != 2 {
		t.Fatalf("dst has %d rows, want 2", n)
	}
	t.Run("COPY into SUPER is refused", func(t *testing.T) {
		e.needEmulator(t)
		e.put(t, "super/one.parquet", writeParquet(t, []struct {
			ID  int32  `parquet:"id"`
			Doc string `parquet:"doc"`
		}{{1, `{"a":1}`}}))
		_, err := conn.Exec(e.ctx, e.copySQL("dst", "id, doc", "super/one.parquet"))
		pgErr(t, err, "0A000", "not supported by the Redshift emulator")
	})
	t.Run("depth at the limit", func(t *testing.T) {
		ok := strings.Repeat("[", 1000) + strings.Repeat("]", 1000)
		e.exec(t, conn, `INSERT INTO src VALUES (10, $1)`, []byte(ok))
		e.exec(t, conn, `INSERT INTO dst SELECT id, JSON_PARSE(b) FROM src WHERE id = 10`)
	})
}
