package redshifttest

import (
	"net/url"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostdriver"
	"github.com/picomq/heavy-sinks/shared/testenv/sinkdriver"
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
	if se.Code != hostdriver.StatusBadConfig || !strings.HasPrefix(se.Message, `Schema mismatch detected in table "`+mm+`": column pico_key is missing (include_key = true)`) {
		t.Errorf("static: %v", se)
	}
	se = rt.OpenErr("mismatch_meta", e.Config(map[string]any{"target_table": mm, "include_metadata": false, "include_key": false}))
	if se.Code != hostdriver.StatusBadConfig || !strings.HasPrefix(se.Message, `Schema mismatch detected in table "`+mm+`": `) ||
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
		wantStatus(t, tmpl.Consume(b), hostdriver.StatusRetry, wantTmpl...)
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
	if se.Code != hostdriver.StatusRetry {
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
		if se.Code != hostdriver.StatusBadConfig || !strings.HasPrefix(se.Message, want) || !strings.Contains(se.Message, "search_path") {
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
