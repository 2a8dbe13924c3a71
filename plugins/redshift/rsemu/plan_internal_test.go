package rsemu

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"select 1", []string{"select 1"}},
		{"select 1; select 2;", []string{"select 1", "select 2"}},
		{"  ;; -- nothing\n ; /* x; */", nil},
		{"select ';' ; select \"a;b\"", []string{"select ';'", `select "a;b"`}},
		{"select $$a;b$$; select $t$ $$; $t$", []string{"select $$a;b$$", "select $t$ $$; $t$"}},
		{"select E'it\\'s;'; select 2", []string{"select E'it\\'s;'", "select 2"}},
		{"select 1 -- c; x\n; select /* a /* nested; */ ; */ 2", []string{"select 1 -- c; x", "select /* a /* nested; */ ; */ 2"}},
		{"select $1; select $2", []string{"select $1", "select $2"}},
	} {
		if got := splitStatements(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitStatements(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRewrite(t *testing.T) {
	for _, tc := range []struct {
		in, want      string
		caseSensitive bool
	}{
		{`SELECT * FROM pg_table_def WHERE tablename = 'pg_table_def'`,
			`SELECT * FROM rsemu_catalog.pg_table_def WHERE tablename = 'pg_table_def'`, false},
		{`select * from PG_CATALOG.PG_TABLE_DEF`, `select * from rsemu_catalog.pg_table_def`, false},
		{`select * from myschema.pg_table_def`, `select * from myschema.pg_table_def`, false},
		{`select * from sys_load_error_detail, stl_load_errors`,
			`select * from rsemu_catalog.sys_load_error_detail, rsemu_catalog.stl_load_errors`, false},
		{`CREATE TABLE "Orders.EU" ("Id" int)`, `CREATE TABLE "orders.eu" ("id" int)`, false},
		{`CREATE TABLE "Orders.EU" ("Id" int)`, `CREATE TABLE "Orders.EU" ("Id" int)`, true},
		{`SELECT x::varchar(max), CAST(y AS character varying(MAX))`, `SELECT x::varchar(65535), CAST(y AS character varying(65535))`, false},
		{`SELECT 'getdate()', "sysdate"`, `SELECT 'getdate()', "sysdate"`, false},
	} {
		got, err := rewrite(tc.in, tc.caseSensitive)
		if err != nil || got != tc.want {
			t.Errorf("rewrite(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestPlanKinds(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		kind planKind
	}{
		{`select 1`, planPass},
		{`CREATE TABLE t (a int)`, planCreateTable},
		{`create temp table t (a int)`, planCreateTable},
		{`CREATE SCHEMA s`, planPass},
		{`CREATE VIEW v AS SELECT 1`, planPass},
		{`truncate table "a.b"`, planTruncate},
		{`TRUNCATE s.t`, planTruncate},
		{`COPY t FROM 's3://b/p' IAM_ROLE 'arn:aws:iam::123456789012:role/R' FORMAT AS PARQUET`, planCopy},
		{`SET enable_case_sensitive_identifier TO true`, planSetCaseSensitive},
		{`SET search_path TO x`, planPass},
		{`show enable_case_sensitive_identifier`, planShowCaseSensitive},
		{`LOCK t`, planPass},
		{`BEGIN`, planPass},
		{`begin transaction isolation level serializable`, planPass},
	} {
		p, err := planStatement(tc.sql, false)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		if p.kind != tc.kind {
			t.Errorf("%s: kind %d, want %d", tc.sql, p.kind, tc.kind)
		}
	}
}

func TestParseCreateTable(t *testing.T) {
	sql := `CREATE TABLE IF NOT EXISTS "s"."we""ird.name" (
		id VARCHAR(512) NOT NULL ENCODE zstd DISTKEY,
		n DECIMAL,
		p NUMERIC(10, 2) DEFAULT 0.5 ENCODE raw,
		c CHAR,
		b BPCHAR,
		t TEXT DEFAULT 'x' || 'y' NOT NULL,
		v VARBINARY,
		d DOUBLE PRECISION,
		ts TIMESTAMP WITHOUT TIME ZONE,
		tz TIMESTAMPTZ,
		f FLOAT,
		ref INTEGER REFERENCES other (id),
		PRIMARY KEY (id),
		UNIQUE (n, p)
	) DISTSTYLE KEY COMPOUND SORTKEY (ts, id) BACKUP NO`
	p, err := planStatement(sql, false)
	if err != nil {
		t.Fatal(err)
	}
	ct := p.create
	if !ct.ifNotExists || ct.name.text != `"s"."we""ird.name"` || ct.name.relation() != `we"ird.name` {
		t.Fatalf("name: %+v", ct)
	}
	want := []struct{ name, rs, pg, enc string }{
		{"id", "character varying(512)", "character varying(512)", "zstd"},
		{"n", "numeric(18,0)", "numeric(18,0)", "az64"},
		{"p", "numeric(10,2)", "numeric(10,2)", "none"},
		{"c", "character(1)", "character(1)", "lzo"},
		{"b", "character(256)", "character(256)", "lzo"},
		{"t", "character varying(256)", "character varying(256)", "lzo"},
		{"v", "varbyte(64000)", "bytea", "lzo"},
		{"d", "double precision", "double precision", "none"},
		{"ts", "timestamp without time zone", "timestamp without time zone", "none"},
		{"tz", "timestamp with time zone", "timestamp with time zone", "az64"},
		{"f", "double precision", "double precision", "none"},
		{"ref", "integer", "integer", "az64"},
	}
	if len(ct.columns) != len(want) {
		t.Fatalf("columns: %+v", ct.columns)
	}
	for i, w := range want {
		c := ct.columns[i]
		if c.name != w.name || c.typ.redshiftName() != w.rs || c.typ.pgType() != w.pg || c.encoding != w.enc {
			t.Errorf("column %d: %s %s %s %s, want %+v", i, c.name, c.typ.redshiftName(), c.typ.pgType(), c.encoding, w)
		}
	}
	if !ct.columns[0].distkey || ct.columns[0].sortkey != 2 || ct.columns[8].sortkey != 1 || !ct.columns[0].notNull {
		t.Errorf("keys: %+v %+v", ct.columns[0], ct.columns[8])
	}
	if ct.columns[5].defaultExpr != `'x' || 'y'` || !ct.columns[5].notNull || ct.columns[2].defaultExpr != "0.5" {
		t.Errorf("defaults: %+v %+v", ct.columns[5], ct.columns[2])
	}
	ddl := ct.pgSQL()
	for _, frag := range []string{`CREATE TABLE IF NOT EXISTS "s"."we""ird.name"`,
		`"id" character varying(512) NOT NULL CHECK (rsemu_catalog.varchar_fits("id", 512))`,
		`"v" bytea CHECK (rsemu_catalog.varbyte_fits("v", 64000))`, `"t" character varying(256) DEFAULT 'x' || 'y' NOT NULL`} {
		if !strings.Contains(ddl, frag) {
			t.Errorf("DDL lacks %q:\n%s", frag, ddl)
		}
	}
	if strings.Contains(strings.ToUpper(ddl), "PRIMARY") || strings.Contains(strings.ToUpper(ddl), "REFERENCES") || strings.Contains(strings.ToUpper(ddl), "UNIQUE") {
		t.Errorf("informational constraints reached PostgreSQL:\n%s", ddl)
	}
}

func TestParseCreateTableErrors(t *testing.T) {
	for sql, want := range map[string]string{
		`CREATE TABLE t (a VARCHAR(0))`:                   "cannot exceed 65535",
		`CREATE TABLE t (a CHAR(4097))`:                   "cannot exceed 4096",
		`CREATE TABLE t (a VARBYTE(MAX))`:                 "syntax error",
		`CREATE TABLE t (a JSONB)`:                        `type "jsonb" does not exist`,
		`CREATE TABLE t (a GEOMETRY)`:                     "not supported",
		`CREATE TABLE t (a INT) DISTKEY (b)`:              "does not exist",
		`CREATE TABLE t (a INT ENCODE bogus)`:             "invalid encoding",
		`CREATE TABLE t (a INT) PARTITION BY (a)`:         "not supported",
		`CREATE TABLE t (a TIMESTAMP(3))`:                 "not supported",
		`CREATE TABLE t (a INT COLLATE case_insensitive)`: "not supported",
		`CREATE TABLE t ()`:                               "syntax error",
	} {
		_, err := planStatement(sql, false)
		if err == nil || !strings.Contains(err.Message, want) {
			t.Errorf("%s: got %v, want %q", sql, err, want)
		}
	}
}

func TestParseCopy(t *testing.T) {
	p, err := planStatement(`COPY "staging_orders.eu" (id, payload) FROM 's3://bkt/redshift/orders/0190.parquet' `+
		`CREDENTIALS 'aws_iam_role=arn:aws:iam::123456789012:role/RedshiftCopy' FORMAT AS PARQUET`, false)
	if err != nil {
		t.Fatal(err)
	}
	cs := p.copy
	if cs.table.relation() != "staging_orders.eu" || !reflect.DeepEqual(cs.columns, []string{"id", "payload"}) ||
		cs.bucket != "bkt" || cs.prefix != "redshift/orders/0190.parquet" ||
		!reflect.DeepEqual(cs.roles, []string{"arn:aws:iam::123456789012:role/RedshiftCopy"}) {
		t.Fatalf("%+v", cs)
	}
	p, err = planStatement(`copy t from 's3://bkt' iam_role 'arn:aws:iam::123456789012:role/A,arn:aws:iam::210987654321:role/B' parquet`, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.copy.prefix != "" || len(p.copy.roles) != 2 {
		t.Fatalf("%+v", p.copy)
	}
	for sql, want := range map[string]string{
		`COPY t FROM 's3://b/p' IAM_ROLE 'x' CREDENTIALS 'aws_iam_role=x' PARQUET`: "conflicting",
		`COPY t FROM 's3://b/p' PARQUET`:                                           "Invalid credentials",
		`COPY t FROM 's3://b/p' IAM_ROLE 'x' PARQUET BOGUS`:                        "syntax error",
		`COPY t FROM 's3://b/p' IAM_ROLE 'x' PARQUET ACCESS_KEY_ID 'a'`:            "not supported",
		`COPY t FROM 'https://x/y' IAM_ROLE 'x' PARQUET`:                           "not supported",
		`COPY t FROM 's3://b/p' IAM_ROLE 'x' FORMAT AS ORC`:                        "not supported",
	} {
		_, err := planStatement(sql, false)
		if err == nil || !strings.Contains(err.Message, want) && !strings.Contains(err.Detail, want) {
			t.Errorf("%s: got %v, want %q", sql, err, want)
		}
	}
}

func TestAuthorize(t *testing.T) {
	s := &Server{roles: map[string]bool{DefaultRole: true}}
	if err := s.authorize([]string{DefaultRole}); err != nil {
		t.Fatal(err)
	}
	if err := s.authorize([]string{DefaultRole, "arn:aws:iam::210987654321:role/Chained"}); err != nil {
		t.Fatal(err)
	}
	for _, roles := range [][]string{
		{"arn:aws:iam::123456789012:role/Other"},
		{"arn:aws:iam::1234:role/RedshiftCopy"},
		{"RedshiftCopy"},
		{DefaultRole, "not-an-arn"},
	} {
		if err := s.authorize(roles); err == nil || !strings.HasPrefix(err.Message, "Not authorized to get credentials of role") {
			t.Errorf("%v: %v", roles, err)
		}
	}
}
