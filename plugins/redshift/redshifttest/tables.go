package redshifttest

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// SchemaMismatch: "Schema mismatch detected", an existing table made under
// other include_metadata, include_key or payload_format settings. A static
// target fails open() BAD_CONFIG; a templated one fails its first batch
// RETRY and is checked again on the next delivery, so fixing the table
// fixes the sink. The table is never altered or written.
func SchemaMismatch(t *testing.T, d sinkdriver.Driver, e *Env) {
	rt := e.Start(d)
	mm, tmplMM := e.Table("mm"), e.Table("tmpl_mm")
	// As include_key = false would have made them, with a row already.
	for _, tbl := range []string{mm, "staging_" + mm, tmplMM, "staging_" + tmplMM} {
		e.Exec(`CREATE TABLE "` + tbl + `" (id VARCHAR(512), pico_offset VARCHAR(20), pico_timestamp VARCHAR(20), ` +
			`pico_topic VARCHAR, pico_partition BIGINT, payload VARBYTE(16777216), created_at VARCHAR)`)
	}
	e.Exec(`INSERT INTO "` + mm + `" (id, payload, created_at) VALUES ('old:0:1', ` + e.bytesLiteral("01") + `, 'then')`)

	// A static table is checked by open().
	se := rt.OpenErr("mismatch_static", e.Config(map[string]any{"target_table": mm}))
	if se.Code != hostclient.StatusBadConfig || !strings.HasPrefix(se.Message, `Schema mismatch detected in table "`+mm+`": column pico_key is missing (include_key = true)`) {
		t.Errorf("static: %v", se)
	}
	se = rt.OpenErr("mismatch_meta", e.Config(map[string]any{"target_table": mm, "include_metadata": false, "include_key": false}))
	if se.Code != hostclient.StatusBadConfig || !strings.HasPrefix(se.Message, `Schema mismatch detected in table "`+mm+`": `) ||
		!strings.Contains(se.Message, "pico_offset") {
		t.Errorf("include_metadata = false on a table with metadata: %v", se)
	}

	// A templated one fails each delivery of its batch RETRY.
	tmplTarget := e.Table("tmpl_{topic}")
	wantTmpl := []string{`Schema mismatch detected in table "` + tmplMM + `"`,
		`column payload is varbyte(16777216), expected VARCHAR (payload_format = "text")`}
	tmpl := rt.Open("mismatch_templated", e.Config(map[string]any{"target_table": tmplTarget, "payload_format": "text", "include_key": false}))
	for attempt := uint32(1); attempt <= 2; attempt++ {
		b := Batch("mm", 0, 3)
		b.Attempt = attempt
		WantStatus(t, tmpl.Consume(b), hostclient.StatusRetry, wantTmpl...)
	}
	if e.Emu != nil { // the statement log is the emulator's
		if n := e.Emu.CountStatements(`(?i)^(copy|insert|alter)`); n != 1 { // the test's own INSERT only
			t.Errorf("%d loads or alterations: %s", n, FirstWords(e.Emu))
		}
	}
	if e.Count(tmplMM) != 0 || e.Count(mm) != 1 {
		t.Error("a mismatched table was written")
	}
	if got := e.Columns(mm); strings.Join(got, ",") != "id,pico_offset,pico_timestamp,pico_topic,pico_partition,payload,created_at" {
		t.Errorf("%s altered: %v", mm, got)
	}
	// With include_key = true the message starts the same way.
	h2 := rt.Open("mismatch_templated_key", e.Config(map[string]any{"target_table": tmplTarget, "payload_format": "text"}))
	se = asStatus(t, h2.Consume(Batch("mm", 0, 2)))
	if !strings.HasPrefix(se.Message, wantTmpl[0]) || !strings.Contains(se.Message, wantTmpl[1]) {
		t.Fatalf("%v", se)
	}
	if se.Code != hostclient.StatusRetry {
		t.Fatalf("status %v", se.Code)
	}

	// The same tables are fine for the settings they were made under.
	ok := rt.Open("mismatch_ok", e.Config(map[string]any{"target_table": mm, "include_key": false}))
	consume(t, ok, Batch("orders", 0, 2))
	if e.Count(mm) != 3 {
		t.Error("rows missing")
	}

	// Fixing the templated table fixes the sink.
	e.Exec(`DROP TABLE "` + tmplMM + `"`)
	e.Exec(`DROP TABLE "staging_` + tmplMM + `"`)
	consume(t, h2, Batch("mm", 0, 2))
	if e.Count(tmplMM) != 2 {
		t.Fatal("rows missing after the table was fixed")
	}
}

// SchemaQualifiedTarget: "Table '...' was not found or has no visible
// columns", a schema-qualified target_table. The sink says so at open,
// BAD_CONFIG, before creating a table whose name would contain the dot; the
// schema set through the connection string, as the spec advises, works.
func SchemaQualifiedTarget(t *testing.T, d sinkdriver.Driver, e *Env) {
	e.NeedEmulator("it creates the schema analytics and counts every table of the database")
	rt := e.Start(d)
	for _, target := range []string{"analytics.orders", "analytics.orders_{topic}", "analytics.orders_{topic_segment[-1]}"} {
		se := rt.OpenErr("qualified", e.Config(map[string]any{"target_table": target}))
		want := "Table '" + target + "' was not found or has no visible columns"
		if se.Code != hostclient.StatusBadConfig || !strings.HasPrefix(se.Message, want) || !strings.Contains(se.Message, "search_path") {
			t.Errorf("got %v\nwant BAD_CONFIG %s ... search_path ...", se, want)
		}
	}
	var n int
	if err := e.DB.QueryRow(e.Ctx, `SELECT count(*) FROM pg_class WHERE relname LIKE '%orders%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("tables were created: %d %v", n, err)
	}

	e.Exec(`CREATE SCHEMA analytics`)
	u, err := url.Parse(e.DSN())
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery += "&options=-c%20search_path%3Danalytics" // the form docs/redshift.md recommends
	inst := rt.Open("search_path", e.Config(map[string]any{"connection_string": u.String(), "target_table": "orders"}))
	consume(t, inst, Batch("orders.eu", 0, 4))
	if err := e.DB.QueryRow(e.Ctx, `SELECT count(*) FROM analytics.orders`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("analytics.orders has %d rows (%v)", n, err)
	}
	if err := e.DB.QueryRow(e.Ctx, `SELECT count(*) FROM analytics.staging_orders`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("analytics.staging_orders has %d rows (%v)", n, err)
	}
	if err := e.DB.QueryRow(e.Ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE '%orders%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("orders tables in public: %d %v", n, err)
	}
	if err := e.DB.QueryRow(e.Ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d tables in public (%v)", n, err)
	}
}

// TemplatedNames: a templated target_table resolves per topic into a quoted
// identifier, whatever the topic holds (quotes, dots, SQL), folded to lower
// case as Redshift folds it; a dot never makes a schema, and a resolved name
// is checked once and then cached.
func TemplatedNames(t *testing.T, d sinkdriver.Driver, e *Env) {
	e.NeedEmulator("it lists every table and schema of the database")
	t.Run("quoted and folded names", func(t *testing.T) {
		e.Exec(`CREATE TABLE victim (id VARCHAR(10))`)
		e.Exec(`INSERT INTO victim VALUES ('alive')`)
		inst := e.Start(d).Open("templated", e.Config(map[string]any{"target_table": "t_{topic}"}))
		topics := []struct{ topic, table string }{ // Redshift (and the emulator) fold quoted names to lower case
			{`orders.eu`, `t_orders.eu`},
			{`we"ird`, `t_we"ird`},
			{`x"; DROP TABLE victim; --`, `t_x"; drop table victim; --`},
			{`Orders.US`, `t_orders.us`},
			{`it's.a "dot".name`, `t_it's.a "dot".name`},
		}
		var want []string
		for _, tp := range topics {
			consume(t, inst, Batch(tp.topic, 0, 3))
			consume(t, inst, Batch(tp.topic, 1, 3)) // the cached name again, overlapping: one new row
			rows := e.Rows(tp.table)
			if len(rows) != 4 {
				t.Fatalf("topic %q: table %q has %d rows, want 4", tp.topic, tp.table, len(rows))
			}
			for i, r := range rows {
				if r["pico_topic"] != tp.topic || r["id"] != fmt.Sprintf("%s:0:%d", tp.topic, i) {
					t.Errorf("topic %q: row %v", tp.topic, r)
				}
			}
			want = append(want, tp.table, "staging_"+tp.table)
		}
		var names []string
		rs, err := e.DB.Query(e.Ctx, `SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND relkind = 'r' AND relname <> 'victim'`)
		if err != nil {
			t.Fatal(err)
		}
		for rs.Next() {
			var n string
			if err := rs.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("tables %q\nwant   %q", names, want)
		}
		var alive string
		if err := e.DB.QueryRow(e.Ctx, `SELECT id FROM victim`).Scan(&alive); err != nil || alive != "alive" {
			t.Fatalf("victim: %q %v", alive, err)
		}
		var schemas int
		if err := e.DB.QueryRow(e.Ctx, `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 't\_%'`).Scan(&schemas); err != nil || schemas != 0 {
			t.Fatalf("a dot made a schema: %d %v", schemas, err)
		}
	})
	t.Run("cached names", func(t *testing.T) {
		e := NewEnv(t)
		inst := e.Start(d).Open("templated", e.Config(map[string]any{"target_table": "t_{topic}"}))
		e.Exec(`CREATE TABLE victim (id VARCHAR(10))`)
		topics := map[string]string{ // topic -> table as Redshift (and the emulator) fold it
			`orders.eu`:                     `t_orders.eu`,
			`we"ird`:                        `t_we"ird`,
			`x"; DROP TABLE victim; --`:     `t_x"; drop table victim; --`,
			`Mixed.Case`:                    `t_mixed.case`,
			`semi;colon 'quote' back\slash`: `t_semi;colon 'quote' back\slash`,
		}
		for topic, table := range topics {
			consume(t, inst, Batch(topic, 0, 3))
			if n := e.Count(table); n != 3 {
				t.Errorf("topic %q: table %q has %d rows", topic, table, n)
			}
			if n := e.Count("staging_" + table); n != 0 {
				t.Errorf("topic %q: staging has %d rows", topic, n)
			}
			rows := e.Rows(table)
			if len(rows) == 3 {
				if id, _ := rows[0]["id"].(string); rows[0]["pico_topic"] != topic || !strings.HasPrefix(id, topic+":0:") {
					t.Errorf("topic %q: row %v", topic, rows[0])
				}
			}
		}
		if n := e.Count("victim"); n != 0 {
			t.Fatal("victim changed")
		}
		// The same names again are cached: no DDL, no pg_table_def.
		e.Emu.ResetStatements()
		consume(t, inst, Batch(`we"ird`, 3, 3))
		if n := e.Emu.CountStatements(`(?i)create table|pg_table_def`); n != 0 {
			t.Errorf("%d table checks for a cached table", n)
		}
	})
}
