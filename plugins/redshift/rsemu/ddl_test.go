package rsemu_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

type tableDefRow struct {
	Column   string
	Type     string
	Encoding string
	Distkey  bool
	Sortkey  int
	NotNull  bool
}

func tableDef(t *testing.T, e *env, conn *pgx.Conn, table string) []tableDefRow {
	t.Helper()
	rows, err := conn.Query(e.ctx, `SELECT "column", type, trim(encoding), distkey, sortkey, "notnull"
		FROM pg_table_def WHERE tablename = $1 ORDER BY "column"`, table)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[tableDefRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCreateTableSinkDDLAndPgTableDef(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	// The sink's DDL, for a table name with a dot and a double quote in it.
	for _, name := range []string{`staging_orders_orders.eu`, `orders_orders.eu`} {
		e.exec(t, conn, `CREATE TABLE IF NOT EXISTS "`+name+`" (
  id VARCHAR(512),
  pico_offset VARCHAR(20),
  pico_timestamp VARCHAR(20),
  pico_topic VARCHAR,
  pico_partition BIGINT,
  pico_key VARCHAR(MAX),
  payload VARBYTE(16777216),
  created_at VARCHAR
)`)
	}
	e.exec(t, conn, `CREATE TABLE "we""ird.name" (id INTEGER NOT NULL, body TEXT) DISTKEY(id) SORTKEY(id)`)

	got := tableDef(t, e, conn, "orders_orders.eu")
	want := map[string]string{
		"id":             "character varying(512)",
		"pico_offset":    "character varying(20)",
		"pico_timestamp": "character varying(20)",
		"pico_topic":     "character varying(256)",
		"pico_partition": "bigint",
		"pico_key":       "character varying(65535)",
		"payload":        "varbyte(16777216)",
		"created_at":     "character varying(256)",
	}
	if len(got) != len(want) {
		t.Fatalf("pg_table_def has %d columns, want %d: %+v", len(got), len(want), got)
	}
	for _, r := range got {
		if want[r.Column] != r.Type {
			t.Errorf("column %s: type %q, want %q", r.Column, r.Type, want[r.Column])
		}
	}

	weird := tableDef(t, e, conn, `we"ird.name`)
	if len(weird) != 2 {
		t.Fatalf("weird table: %+v", weird)
	}
	body, id := weird[0], weird[1]
	if id.Type != "integer" || !id.NotNull || !id.Distkey || id.Sortkey != 1 {
		t.Errorf("id: %+v", id)
	}
	if body.Type != "character varying(256)" || body.NotNull || body.Distkey || body.Sortkey != 0 {
		t.Errorf("body: %+v", body)
	}

	// IF NOT EXISTS on an existing table changes nothing, and the data
	// survives.
	e.exec(t, conn, `INSERT INTO "orders_orders.eu" (id) VALUES ('a')`)
	e.exec(t, conn, `CREATE TABLE IF NOT EXISTS "orders_orders.eu" (id VARCHAR(10))`)
	if n := count(t, e, conn, `"orders_orders.eu"`); n != 1 {
		t.Fatalf("rows after CREATE IF NOT EXISTS: %d", n)
	}
	if got := tableDef(t, e, conn, "orders_orders.eu"); len(got) != 8 {
		t.Fatalf("pg_table_def after CREATE IF NOT EXISTS: %+v", got)
	}
	_, err := conn.Exec(e.ctx, `CREATE TABLE "orders_orders.eu" (id VARCHAR(10))`)
	pgErr(t, err, "42P07", "already exists")
}

func TestPgTableDefFollowsSearchPath(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE SCHEMA analytics`)
	e.exec(t, conn, `CREATE TABLE analytics.orders (id VARCHAR(512))`)
	if got := tableDef(t, e, conn, "orders"); len(got) != 0 {
		t.Fatalf("table outside search_path is visible: %+v", got)
	}
	e.exec(t, conn, `SET search_path TO '$user', public, analytics`)
	got := tableDef(t, e, conn, "orders")
	if len(got) != 1 || got[0].Type != "character varying(512)" {
		t.Fatalf("after search_path: %+v", got)
	}
	// pg_catalog.pg_table_def is the same view.
	var n int
	if err := conn.QueryRow(e.ctx, `SELECT count(*) FROM pg_catalog.pg_table_def WHERE tablename = 'orders'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("pg_catalog.pg_table_def: %d %v", n, err)
	}
}

func TestSearchPathFromConnectionOptions(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE SCHEMA analytics`)
	e.exec(t, conn, `CREATE TABLE analytics.orders (id VARCHAR(512))`)
	// The sink documents ?options=-c search_path=analytics for schemas.
	sep := "?"
	if strings.Contains(e.dsn, "?") {
		sep = "&"
	}
	c2, err := pgx.Connect(e.ctx, e.dsn+sep+"options=-c%20search_path%3Danalytics")
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(e.ctx)
	if got := tableDef(t, e, c2, "orders"); len(got) != 1 {
		t.Fatalf("pg_table_def with options search_path: %+v", got)
	}
}

func TestVarcharAndVarbyteLimitsAreBytes(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE lim (v4 VARCHAR(4), bare VARCHAR, mx VARCHAR(MAX), b3 VARBYTE(3), c2 CHAR(2))`)

	// "éé" is 2 characters, 4 bytes: fits. "ééé" is 3 characters, 6 bytes: does not.
	e.exec(t, conn, `INSERT INTO lim (v4) VALUES ('éé')`)
	_, err := conn.Exec(e.ctx, `INSERT INTO lim (v4) VALUES ('ééé')`)
	pgErr(t, err, "22001", "value too long for type character varying(4)")
	// The same through the extended protocol with a parameter.
	_, err = conn.Exec(e.ctx, `INSERT INTO lim (v4) VALUES ($1)`, "€€")
	pgErr(t, err, "22001", "value too long for type character varying(4)")

	// Bare VARCHAR is 256 bytes: 128 two-byte characters fit, 129 do not.
	e.exec(t, conn, `INSERT INTO lim (bare) VALUES ($1)`, strings.Repeat("é", 128))
	_, err = conn.Exec(e.ctx, `INSERT INTO lim (bare) VALUES ($1)`, strings.Repeat("é", 129))
	pgErr(t, err, "22001", "character varying(256)")

	e.exec(t, conn, `INSERT INTO lim (mx) VALUES ($1)`, strings.Repeat("x", 65535))
	_, err = conn.Exec(e.ctx, `INSERT INTO lim (mx) VALUES ($1)`, strings.Repeat("é", 32768))
	pgErr(t, err, "22001", "character varying(65535)")

	e.exec(t, conn, `INSERT INTO lim (b3) VALUES ($1)`, []byte{1, 2, 3})
	_, err = conn.Exec(e.ctx, `INSERT INTO lim (b3) VALUES ($1)`, []byte{1, 2, 3, 4})
	pgErr(t, err, "22001", "value too long for type varbyte(3)")

	e.exec(t, conn, `INSERT INTO lim (c2) VALUES ('ab')`)
	_, err = conn.Exec(e.ctx, `INSERT INTO lim (c2) VALUES ('é')`)
	pgErr(t, err, "22021", "Multibyte character not supported for CHAR")

	_, err = conn.Exec(e.ctx, `CREATE TABLE toolong (v VARCHAR(65536))`)
	pgErr(t, err, "22023", "cannot exceed 65535")
	_, err = conn.Exec(e.ctx, `CREATE TABLE toolong (v VARBYTE(16777217))`)
	pgErr(t, err, "22023", "cannot exceed 16777216")
	e.exec(t, conn, `CREATE TABLE maxbyte (v VARBINARY(16777216), w VARBYTE)`)
	got := tableDef(t, e, conn, "maxbyte")
	if got[0].Type != "varbyte(16777216)" || got[1].Type != "varbyte(64000)" {
		t.Fatalf("varbyte types: %+v", got)
	}
}

func TestQuotedIdentifiersFoldToLowerCase(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE "Orders.EU" ("Id" VARCHAR(10))`)
	if got := tableDef(t, e, conn, "orders.eu"); len(got) != 1 || got[0].Column != "id" {
		t.Fatalf("Redshift folds quoted identifiers by default: %+v", got)
	}
	if got := tableDef(t, e, conn, "Orders.EU"); len(got) != 0 {
		t.Fatalf("mixed-case name found in pg_table_def: %+v", got)
	}
	e.exec(t, conn, `SET enable_case_sensitive_identifier TO true`)
	e.exec(t, conn, `CREATE TABLE "Mixed" ("Col" INTEGER)`)
	if got := tableDef(t, e, conn, "Mixed"); len(got) != 1 || got[0].Column != "Col" {
		t.Fatalf("case-sensitive identifiers: %+v", got)
	}
}
