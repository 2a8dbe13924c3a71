package rsql_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
)

func TestIdent(t *testing.T) {
	tests := []struct{ name, want string }{
		{"orders", `"orders"`},
		{"orders_orders.eu", `"orders_orders.eu"`}, // a dot is part of the name
		{"analytics.orders", `"analytics.orders"`},
		{`evil"; DROP TABLE x; --`, `"evil""; DROP TABLE x; --"`},
		{`""`, `""""""`},
		{"Orders", `"Orders"`},
		{"with space", `"with space"`},
		{"größe", `"größe"`},
	}
	for _, tt := range tests {
		if got := rsql.Ident(tt.name); got != tt.want {
			t.Errorf("Ident(%q) = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestLiteral(t *testing.T) {
	tests := []struct{ s, want string }{
		{"s3://bucket/prefix/x.parquet", `'s3://bucket/prefix/x.parquet'`},
		{"it's", `'it''s'`},
		{"''", `''''''`},
		{"", `''`},
	}
	for _, tt := range tests {
		if got := rsql.Literal(tt.s); got != tt.want {
			t.Errorf("Literal(%q) = %s, want %s", tt.s, got, tt.want)
		}
	}
}

func TestCheckLiteral(t *testing.T) {
	for _, ok := range []string{"", "arn:aws:iam::123456789012:role/RedshiftCopy", "redshift/orders", "it's fine", "größe"} {
		if err := rsql.CheckLiteral(ok); err != nil {
			t.Errorf("CheckLiteral(%q) = %v", ok, err)
		}
	}
	bad := map[string]string{
		`a\b`:        "backslash",
		"a\nb":       "control character U+000A",
		"a\x00b":     "control character U+0000",
		"\xff":       "not valid UTF-8",
		"tab\there":  "control character U+0009",
		"del\x7fete": "control character U+007F",
	}
	for s, want := range bad {
		err := rsql.CheckLiteral(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckLiteral(%q) = %v, want an error mentioning %q", s, err, want)
		}
	}
}

func TestCheckTableName(t *testing.T) {
	longest := strings.Repeat("t", rsql.IdentifierMax-len(rsql.StagingPrefix))
	for _, ok := range []string{"orders", "orders_orders.eu", `a"b`, longest} {
		if err := rsql.CheckTableName(ok); err != nil {
			t.Errorf("CheckTableName(%q) = %v", ok, err)
		}
	}
	bad := map[string]string{
		"":               "the table name is empty",
		"a\x00b":         "control character",
		"\xfe":           "not valid UTF-8",
		longest + "x":    "is too long: its staging table staging_tttttttttttttttt... is 128 bytes and Redshift identifiers hold at most 127",
		"line\nbreak":    "control character U+000A",
		"tab\tseparated": "control character U+0009",
		"staging_orders": `starts with "staging_"`,
		"STAGING_Orders": `staging twin of table "Orders"`,
	}
	for name, want := range bad {
		err := rsql.CheckTableName(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckTableName(%q) = %v, want an error containing %q", name, err, want)
		}
	}
}

// combos are every include_metadata × include_key × payload_format setting.
func combos() []rsql.Options {
	var out []rsql.Options
	for _, meta := range []bool{true, false} {
		for _, key := range []bool{true, false} {
			for _, p := range []rsql.PayloadFormat{rsql.PayloadVarbyte, rsql.PayloadText, rsql.PayloadSuper} {
				out = append(out, rsql.Options{IncludeMetadata: meta, IncludeKey: key, Payload: p})
			}
		}
	}
	return out
}

func optName(o rsql.Options) string {
	return fmt.Sprintf("metadata=%v/key=%v/payload=%v", o.IncludeMetadata, o.IncludeKey, o.Payload)
}

func TestLayoutColumnsEveryCombination(t *testing.T) {
	for _, o := range combos() {
		t.Run(optName(o), func(t *testing.T) {
			want := []string{"id"}
			if o.IncludeMetadata {
				want = append(want, "pico_offset", "pico_timestamp", "pico_topic", "pico_partition")
			}
			if o.IncludeKey {
				want = append(want, "pico_key")
			}
			want = append(want, "payload", "created_at")
			l := rsql.NewLayout(o)
			if got := strings.Join(l.Names(), ", "); got != strings.Join(want, ", ") {
				t.Fatalf("columns %s, want %s", got, strings.Join(want, ", "))
			}
			for i, c := range l.Columns {
				if l.Position(c.ID) != i || !l.Has(c.ID) {
					t.Errorf("Position(%s) = %d, want %d", c.Name, l.Position(c.ID), i)
				}
			}
			if l.Has(rsql.Key) != o.IncludeKey || l.Has(rsql.Topic) != o.IncludeMetadata {
				t.Error("Has disagrees with the options")
			}
			list := strings.Join(want, ", ")
			if got := rsql.Copy("staging_t", l, "s3://b/k.parquet", "arn:r"); !strings.Contains(got, `"staging_t" (`+list+`) FROM`) {
				t.Errorf("COPY column list: %s", got)
			}
			if got := rsql.Copy("staging_t", l.Staging(), "s3://b/k.parquet", "arn:r"); !strings.Contains(got, `"staging_t" (`+list+`) FROM`) {
				t.Errorf("COPY column list of the staging layout: %s", got)
			}
			// A SUPER payload is parsed on its way out of staging.
			sel := list
			if o.Payload == rsql.PayloadSuper {
				sel = strings.Replace(list, "payload", "JSON_PARSE(payload)", 1)
			}
			ins := rsql.Insert("t", "staging_t", l)
			if !strings.HasPrefix(ins, `INSERT INTO "t" (`+list+`) SELECT `+sel+` FROM (SELECT `+list+", ROW_NUMBER()") {
				t.Errorf("INSERT column lists: %s", ins)
			}
		})
	}
}

func TestCreateTableDefaultsMatchTheSpec(t *testing.T) {
	// The spec's DDL, verbatim, for the defaults.
	want := `CREATE TABLE IF NOT EXISTS "orders_eu" (
  id VARCHAR(512),
  pico_offset VARCHAR(20),
  pico_timestamp VARCHAR(20),
  pico_topic VARCHAR,
  pico_partition BIGINT,
  pico_key VARCHAR(MAX),
  payload VARBYTE(16777216),
  created_at VARCHAR
)`
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: rsql.PayloadVarbyte})
	if got := rsql.CreateTable("orders_eu", l); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestCreateTableEveryCombination(t *testing.T) {
	for _, o := range combos() {
		t.Run(optName(o), func(t *testing.T) {
			var b strings.Builder
			b.WriteString("CREATE TABLE IF NOT EXISTS \"staging_a\"\"b.c\" (\n  id VARCHAR(512)")
			if o.IncludeMetadata {
				b.WriteString(",\n  pico_offset VARCHAR(20),\n  pico_timestamp VARCHAR(20),\n  pico_topic VARCHAR,\n  pico_partition BIGINT")
			}
			if o.IncludeKey {
				b.WriteString(",\n  pico_key VARCHAR(MAX)")
			}
			target := b.String() // the columns before payload
			if o.Payload == rsql.PayloadText {
				b.WriteString(",\n  payload VARCHAR(MAX)")
			} else {
				// A SUPER payload is staged as VARBYTE.
				b.WriteString(",\n  payload VARBYTE(16777216)")
			}
			b.WriteString(",\n  created_at VARCHAR\n)")
			l := rsql.NewLayout(o)
			if got := rsql.CreateTable(rsql.Staging(`a"b.c`), l.Staging()); got != b.String() {
				t.Fatalf("got\n%s\nwant\n%s", got, b.String())
			}
			if o.Payload == rsql.PayloadSuper {
				target = strings.Replace(target, `"staging_a""b.c"`, `"a""b.c"`, 1) + ",\n  payload SUPER,\n  created_at VARCHAR\n)"
				if got := rsql.CreateTable(`a"b.c`, l); got != target {
					t.Fatalf("target: got\n%s\nwant\n%s", got, target)
				}
			} else if l.Staging() != l {
				t.Fatal("Staging() differs from the layout without a SUPER payload")
			}
		})
	}
}

func TestLoadStatements(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: false, IncludeKey: true, Payload: rsql.PayloadText})
	table := `orders_we"ird.eu`
	staging := rsql.Staging(table)
	if staging != `staging_orders_we"ird.eu` {
		t.Fatalf("staging name %q", staging)
	}
	tests := []struct{ name, got, want string }{
		{"lock", rsql.Lock(staging), `LOCK "staging_orders_we""ird.eu"`},
		{"copy", rsql.Copy(staging, l, rsql.S3URL("bucket", "pre/fix/0190.parquet"), "arn:aws:iam::123456789012:role/RedshiftCopy"),
			`COPY "staging_orders_we""ird.eu" (id, pico_key, payload, created_at) FROM 's3://bucket/pre/fix/0190.parquet' ` +
				`CREDENTIALS 'aws_iam_role=arn:aws:iam::123456789012:role/RedshiftCopy' FORMAT AS PARQUET STATUPDATE OFF`},
		{"copy quotes literals", rsql.Copy("s", l, "s3://b/it's.parquet", "arn:x'y"),
			`COPY "s" (id, pico_key, payload, created_at) FROM 's3://b/it''s.parquet' CREDENTIALS 'aws_iam_role=arn:x''y' FORMAT AS PARQUET STATUPDATE OFF`},
		{"insert", rsql.Insert(table, staging, l),
			`INSERT INTO "orders_we""ird.eu" (id, pico_key, payload, created_at) SELECT id, pico_key, payload, created_at ` +
				`FROM (SELECT id, pico_key, payload, created_at, ROW_NUMBER() OVER (PARTITION BY id ORDER BY id) AS pico_rn ` +
				`FROM "staging_orders_we""ird.eu") staged WHERE staged.pico_rn = 1 ` +
				`AND NOT EXISTS (SELECT 1 FROM "orders_we""ird.eu" existing WHERE existing.id = staged.id)`},
		{"cleanup", rsql.DeleteAll(staging), `DELETE FROM "staging_orders_we""ird.eu"`},
		{"table def", rsql.TableDefQuery, `SELECT "column", type FROM pg_table_def WHERE tablename = $1`},
		{"script", rsql.Script("BEGIN", rsql.Lock("a;b"), "COMMIT"), "BEGIN;\nLOCK \"a;b\";\nCOMMIT"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, tt.got, tt.want)
		}
	}
	if strings.Contains(rsql.Copy("s", l, "s3://b/k", "r"), "REGION") {
		t.Error("COPY must not name a REGION")
	}
}

func TestDefaultLimits(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: rsql.PayloadText})
	got := fmt.Sprint(l.DefaultLimits())
	// id, offset, timestamp, topic, partition, key, payload, created_at
	if want := "[512 20 20 256 0 65535 65535 256]"; got != want {
		t.Fatalf("limits %s, want %s", got, want)
	}
	l = rsql.NewLayout(rsql.Options{Payload: rsql.PayloadVarbyte})
	if got, want := fmt.Sprint(l.DefaultLimits()), "[512 16777216 256]"; got != want {
		t.Fatalf("limits %s, want %s", got, want)
	}
}

func TestCopyManifestAndStagedDuplicates(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{Payload: rsql.PayloadVarbyte})
	got := rsql.CopyManifest("staging_o", l, "s3://b/p/x.manifest", "arn:aws:iam::123456789012:role/R")
	want := `COPY "staging_o" (id, payload, created_at) FROM 's3://b/p/x.manifest' CREDENTIALS 'aws_iam_role=arn:aws:iam::123456789012:role/R' FORMAT AS PARQUET MANIFEST STATUPDATE OFF`
	if got != want {
		t.Errorf("CopyManifest:\n got %s\nwant %s", got, want)
	}
	if got, want := rsql.StagedDuplicates("o", "staging_o"),
		`SELECT staged.id FROM "staging_o" staged WHERE EXISTS (SELECT 1 FROM "o" existing WHERE existing.id = staged.id)`; got != want {
		t.Errorf("StagedDuplicates:\n got %s\nwant %s", got, want)
	}
	m := string(rsql.Manifest([]rsql.ManifestFile{{URL: "s3://b/a.parquet", Size: 10}, {URL: "s3://b/b.parquet", Size: 20}}))
	if want := `{"entries":[{"url":"s3://b/a.parquet","mandatory":true,"meta":{"content_length":10}},{"url":"s3://b/b.parquet","mandatory":true,"meta":{"content_length":20}}]}`; m != want {
		t.Errorf("Manifest:\n got %s\nwant %s", m, want)
	}
}

// The upsert statements name the key columns, filter applied changes by
// offset and pick each key's last change by offset.
func TestUpsertStatements(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true, KeyColumns: []string{"key_a", "key_b"}})
	if got := len(l.Staging().Columns) - len(l.Columns); got != 4 {
		t.Fatalf("staging has %d more columns than the target, want the 4 change columns", got)
	}
	u := rsql.NewUpsert("t", "staging_t", "offsets_t", l)
	for stmt, want := range map[string]string{
		u.SkipApplied:   `"staging_t".pico_change_offset <= "offsets_t".applied_offset`,
		u.DeleteKeys:    `DELETE FROM "t" USING "staging_t" WHERE "t".key_a = "staging_t".key_a AND "t".key_b = "staging_t".key_b`,
		u.Insert:        `ROW_NUMBER() OVER (PARTITION BY key_a, key_b ORDER BY pico_change_offset DESC, pico_change_partition DESC, pico_change_topic DESC) AS pico_rn FROM "staging_t") latest WHERE latest.pico_rn = 1 AND latest.pico_op = 'u'`,
		u.RecordOffsets: `SELECT pico_change_topic, pico_change_partition, MAX(pico_change_offset) FROM "staging_t" GROUP BY`,
	} {
		if !strings.Contains(stmt, want) {
			t.Errorf("%s\nlacks %s", stmt, want)
		}
	}
	if strings.Contains(u.Insert, "pico_op,") && strings.Contains(u.Insert, "INSERT INTO \"t\" (id, pico_offset, pico_timestamp, pico_topic, pico_partition, pico_key, payload, created_at, key_a, key_b) SELECT id") == false {
		t.Errorf("the INSERT's column list: %s", u.Insert)
	}
}

func TestKeyColumnNames(t *testing.T) {
	got, err := rsql.KeyColumnNames([]string{"Tenant", "order_id"})
	if err != nil || strings.Join(got, ",") != "key_tenant,key_order_id" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range [][]string{{"a-b"}, {"1a"}, {"a", "A"}, {strings.Repeat("x", 124)}} {
		if _, err := rsql.KeyColumnNames(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
