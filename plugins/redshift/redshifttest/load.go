package redshifttest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// specColumns is "What lands in the table" with defaults: the columns of
// both tables, in order, as pg_table_def shows Redshift's types.
var specColumns = []string{
	"id character varying(512)",
	"pico_offset character varying(20)",
	"pico_timestamp character varying(20)",
	"pico_topic character varying(256)",
	"pico_partition bigint",
	"pico_key character varying(65535)",
	"payload varbyte(16777216)",
	"created_at character varying(256)",
}

var rfc3339ms = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// needBytes skips a test that compares VARBYTE payloads on a real cluster,
// where Redshift returns them as hex text the reader does not decode yet.
func (e *Env) needBytes() {
	e.t.Helper()
	e.NeedEmulator("it compares VARBYTE payloads, which Redshift returns as hex text the reader does not decode yet")
}

// TableDef is what pg_table_def shows for table, as "column type" in
// column order: through the emulator (which serves the catalog view), or
// on the cluster.
func (e *Env) TableDef(table string) []string {
	e.t.Helper()
	conn, err := pgx.Connect(e.Ctx, e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rs, err := conn.Query(e.Ctx, `SELECT "column", type FROM pg_table_def WHERE tablename = $1`, table)
	if err != nil {
		e.t.Fatal(err)
	}
	defs, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (string, error) {
		var c, typ string
		err := r.Scan(&c, &typ)
		return c + " " + typ, err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return defs
}

// checkRow compares a row with the record it came from, per "What lands in
// the table"; payload is the column's content for the record's bytes.
func checkRow(t *testing.T, got Row, topic string, rec sinkdriver.Record, metadata, key bool, payload any) {
	t.Helper()
	want := Row{"id": fmt.Sprintf("%s:0:%d", topic, rec.Offset), "payload": payload, "created_at": got["created_at"]}
	if metadata {
		want["pico_offset"] = fmt.Sprint(rec.Offset)
		want["pico_timestamp"] = fmt.Sprint(rec.TimestampMs)
		want["pico_topic"] = topic
		want["pico_partition"] = int64(0)
	}
	if key {
		if rec.Key == nil {
			want["pico_key"] = nil
		} else {
			want["pico_key"] = base64.StdEncoding.EncodeToString(rec.Key)
		}
	}
	if fmt.Sprintf("%#v", map[string]any(got)) != fmt.Sprintf("%#v", map[string]any(want)) {
		t.Errorf("offset %d:\ngot  %#v\nwant %#v", rec.Offset, got, want)
	}
	if s, _ := got["created_at"].(string); !rfc3339ms.MatchString(s) {
		t.Errorf("offset %d: created_at %q is not RFC 3339 UTC with milliseconds", rec.Offset, s)
	}
}

// checkCreatedAt checks each row's created_at lies within [start, end] and
// that the rows of each chunk of chunkSize share one value.
func checkCreatedAt(t *testing.T, table string, rows []Row, chunkSize int, start, end time.Time) {
	t.Helper()
	perChunk := map[int]map[string]bool{}
	for i, r := range rows {
		ca, _ := r["created_at"].(string)
		ts, err := time.Parse(time.RFC3339, ca)
		if err != nil || ts.Before(start) || ts.After(end) {
			t.Errorf("%s: created_at %s is not within the consume calls (%s .. %s)", table, ca, start, end)
		}
		if perChunk[i/chunkSize] == nil {
			perChunk[i/chunkSize] = map[string]bool{}
		}
		perChunk[i/chunkSize][ca] = true
	}
	for chunk, values := range perChunk {
		if len(values) != 1 {
			t.Errorf("%s chunk %d has created_at values %v, want one", table, chunk, values)
		}
	}
}

// checkMetrics checks the sink's counters of inst against want.
func checkMetrics(t *testing.T, inst sinkdriver.Instance, want map[string]float64) map[string]float64 {
	t.Helper()
	m := sinkdriver.SinkMetrics(t, inst)
	for k, v := range want {
		if m[k] != v {
			t.Errorf("metric %s = %v, want %v", k, m[k], v)
		}
	}
	return m
}

// LoadRowsExactlyAsSpecified: "What lands in the table", for the spec's
// quick start (a templated table per last topic segment, text payloads,
// two topics) and for raw VARBYTE records into a static table in chunks of
// batch_size: the columns of both tables, every row's values, one
// created_at per chunk within the call, one locked BEGIN LOCK COPY INSERT
// DELETE COMMIT per chunk, nothing left in staging or S3, the counters.
func LoadRowsExactlyAsSpecified(t *testing.T, d sinkdriver.Driver, _ *Env) { // each subtest has a destination of its own
	t.Run("quick start", func(t *testing.T) {
		e := NewEnv(t)
		inst := e.Start(d).Open("orders_rs", e.Config(map[string]any{"payload_format": "text"}))
		if e.Emu != nil {
			if n := e.Emu.CountStatements(`(?i)create table`); n != 0 {
				t.Fatalf("open created %d tables for a templated target_table", n)
			}
		}
		eu := Batch("orders.eu", 40, 250) // three chunks of the default batch_size: 100, 100, 50
		eu.Records[249].Offset = 1 << 40  // offsets are decimal strings, whatever their size
		eu.Records[7].Payload = []byte(`{"name":"größe ✓","note":"tab\there"}`)
		us := Batch("orders.us", 0, 3)
		start := time.Now().UTC().Truncate(time.Millisecond)
		consume(t, inst, eu)
		consume(t, inst, us)
		end := time.Now().UTC()

		euTable, usTable := e.Table("orders_eu"), e.Table("orders_us")
		for _, tbl := range []string{euTable, "staging_" + euTable, usTable, "staging_" + usTable} {
			want := slices.Clone(specColumns)
			want[6] = "payload character varying(65535)" // payload_format = "text": VARCHAR(MAX)
			if got := e.TableDef(tbl); !slices.Equal(got, want) {
				t.Errorf("pg_table_def of %s:\n%s\nwant\n%s", tbl, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		for _, c := range []struct {
			table string
			b     sinkdriver.Batch
		}{{euTable, eu}, {usTable, us}} {
			rows := e.Rows(c.table)
			if len(rows) != len(c.b.Records) {
				t.Fatalf("%s: %d rows, want %d", c.table, len(rows), len(c.b.Records))
			}
			for i, rec := range c.b.Records {
				checkRow(t, rows[i], c.b.Topic, rec, true, true, string(rec.Payload))
			}
			checkCreatedAt(t, c.table, rows, 100, start, end)
		}
		// The spec's edge cases, spelled out: no key is NULL, an empty key
		// is an empty string, a key is base64; a large offset stays a
		// decimal.
		rows := e.Rows(euTable)
		if rows[0]["pico_key"] != nil || rows[1]["pico_key"] != "" || rows[2]["pico_key"] != base64.StdEncoding.EncodeToString([]byte("customer-42")) {
			t.Errorf("keys %#v %#v %#v: want NULL, '', base64 of customer-42", rows[0]["pico_key"], rows[1]["pico_key"], rows[2]["pico_key"])
		}
		if last := rows[249]; last["id"] != "orders.eu:0:1099511627776" || last["pico_offset"] != "1099511627776" {
			t.Errorf("large offset: %v", last)
		}
		for _, tbl := range []string{"staging_" + euTable, "staging_" + usTable} {
			if n := e.Count(tbl); n != 0 {
				t.Errorf("%s holds %d rows", tbl, n)
			}
		}
		if objs := e.Objects(""); len(objs) != 0 {
			t.Errorf("files left in S3 with archive = false: %v", objs)
		}
		checkMetrics(t, inst, map[string]float64{"chunks": 4, "files_uploaded": 4, "rows_copied": 253, "rows_inserted": 253,
			"rows_skipped_duplicates": 0, "copy_retries": 0, "files_deleted": 4, "files_archived": 0, "cleanup_failures": 0})
		if e.Emu != nil { // the statement log is the emulator's
			quickStartStatements(t, e)
		}
	})

	t.Run("raw records in chunks of batch_size", func(t *testing.T) {
		e := NewEnv(t)
		e.needBytes()
		table := e.Table("orders_eu")
		inst := e.Start(d).Open("happy", e.Config(map[string]any{"target_table": table, "batch_size": 100}))
		// A static table is made at open, with the spec's types.
		for _, tbl := range []string{table, "staging_" + table} {
			if got := e.TableDef(tbl); !slices.Equal(got, specColumns) {
				t.Errorf("pg_table_def of %s:\n%s\nwant\n%s", tbl, strings.Join(got, "\n"), strings.Join(specColumns, "\n"))
			}
		}
		e.Emu.ResetStatements()
		b := Batch("orders.eu", 40, 250) // three chunks: 100, 100, 50
		b.Schema = "raw"
		b.Records[3].Key = []byte{}     // an empty key is a key
		b.Records[4].Key = nil          // no key is NULL
		b.Records[5].Payload = []byte{} // an empty payload is a payload
		start := time.Now().UTC().Truncate(time.Millisecond)
		consume(t, inst, b)
		end := time.Now().UTC()

		rows := e.Rows(table)
		if len(rows) != 250 {
			t.Fatalf("%d rows, want 250", len(rows))
		}
		for i, rec := range b.Records {
			checkRow(t, rows[i], b.Topic, rec, true, true, rec.Payload)
		}
		if rows[3]["pico_key"] != "" || rows[4]["pico_key"] != nil || !bytes.Equal(rows[5]["payload"].([]byte), []byte{}) {
			t.Errorf("empty key %#v, no key %#v, empty payload %#v", rows[3]["pico_key"], rows[4]["pico_key"], rows[5]["payload"])
		}
		checkCreatedAt(t, table, rows, 100, start, end)
		if n := e.Count("staging_" + table); n != 0 {
			t.Errorf("staging holds %d rows after the load", n)
		}
		if objs := e.Objects(""); len(objs) != 0 {
			t.Errorf("files left in S3: %v", objs)
		}
		// From the first BEGIN on: the sink's reads before it are not loads.
		got := FirstWords(e.Emu)
		if i := strings.Index(got, "BEGIN"); i >= 0 {
			got = got[i:]
		}
		if want := strings.TrimSpace(strings.Repeat("BEGIN LOCK COPY INSERT DELETE COMMIT ", 3)); got != want {
			t.Errorf("statements %s\nwant %s", got, want)
		}
		m := checkMetrics(t, inst, map[string]float64{"chunks": 3, "files_uploaded": 3, "rows_copied": 250, "rows_inserted": 250,
			"rows_skipped_duplicates": 0, "copy_retries": 0, "files_deleted": 3, "files_archived": 0, "cleanup_failures": 0})
		if m["s3_bytes_uploaded"] <= 0 {
			t.Errorf("s3_bytes_uploaded %v", m["s3_bytes_uploaded"])
		}
	})
}

// quickStartStatements checks the emulator's statement log of the quick
// start: each chunk one COPY of one file, then the deduplicating INSERT, in
// one locked transaction, on connections that set statement_timeout first;
// two CREATE TABLE IF NOT EXISTS per resolved name.
func quickStartStatements(t *testing.T, e *Env) {
	t.Helper()
	var seq []string
	for _, s := range strings.Fields(FirstWords(e.Emu)) {
		if s != "CREATE" && s != "SELECT" && s != "SET" {
			seq = append(seq, s)
		}
	}
	// Each of the sink's connections first sets the default
	// statement_timeout, 10 minutes (the test's own connections through the
	// emulator do not load).
	first := map[int]string{}
	for _, s := range e.Emu.StatementLog() {
		if _, ok := first[s.Session]; !ok {
			first[s.Session] = s.SQL
		}
		if strings.HasPrefix(s.SQL, "LOCK") && first[s.Session] != "SET statement_timeout TO 600000" {
			t.Errorf("session %d loaded without statement_timeout; it began with %q", s.Session, first[s.Session])
		}
	}
	if got, want := strings.Join(seq, " "), strings.TrimSpace(strings.Repeat("BEGIN LOCK COPY INSERT DELETE COMMIT ", 4)); got != want {
		t.Errorf("statements %s\nwant %s", got, want)
	}
	if n := e.Emu.CountStatements(`(?i)^create table if not exists`); n != 4 {
		t.Errorf("%d CREATE TABLE IF NOT EXISTS, want 4 (two tables per resolved name)", n)
	}
	copyRE := regexp.MustCompile(`^COPY "staging_orders_(eu|us)" \(id, pico_offset, pico_timestamp, pico_topic, pico_partition, pico_key, payload, created_at\) ` +
		`FROM 's3://` + regexp.QuoteMeta(e.Bucket) + `/redshift/orders/` + uuidV7 + `\.parquet' ` +
		`CREDENTIALS 'aws_iam_role=` + regexp.QuoteMeta(rsemu.DefaultRole) + `' FORMAT AS PARQUET STATUPDATE OFF$`)
	copies := 0
	for _, s := range e.Emu.Statements() {
		if strings.HasPrefix(s, "COPY") {
			copies++
			if !copyRE.MatchString(s) {
				t.Errorf("COPY statement:\n%s\ndoes not match\n%s", s, copyRE)
			}
		}
	}
	if copies != 4 {
		t.Errorf("%d COPY statements, want 4", copies)
	}
}

// CopyStatementText: the COPY names the staging table as a quoted
// identifier, the file under s3_prefix with its slashes normalised and a
// version 7 UUID name, the cluster's role, Parquet and STATUPDATE OFF; the
// quoted name is folded to lower case as Redshift folds it.
func CopyStatementText(t *testing.T, d sinkdriver.Driver, e *Env) {
	inst := e.Start(d).Open("copy_text", e.Config(map[string]any{"target_table": e.Table("t_{topic}"), "s3_prefix": "/pre/fix/"}))
	if e.Emu != nil {
		e.Emu.ResetStatements()
	}
	consume(t, inst, Batch("Orders", 0, 3))
	// Redshift folds quoted identifiers to lower case; the emulator too.
	if n := e.Count(e.Table("t_orders")); n != 3 {
		t.Fatalf("t_orders has %d rows", n)
	}
	if e.Emu == nil { // the statement log is the emulator's
		return
	}
	var copySQL string
	for _, s := range e.Emu.Statements() {
		if strings.HasPrefix(s, "COPY") {
			copySQL = s
		}
	}
	prefix := `COPY "staging_t_Orders" (id, pico_offset, pico_timestamp, pico_topic, pico_partition, pico_key, payload, created_at) FROM 's3://` +
		e.Bucket + `/pre/fix/`
	suffix := `.parquet' CREDENTIALS 'aws_iam_role=` + rsemu.DefaultRole + `' FORMAT AS PARQUET STATUPDATE OFF`
	if !strings.HasPrefix(copySQL, prefix) || !strings.HasSuffix(copySQL, suffix) {
		t.Fatalf("COPY text:\n%s\nwant\n%s<uuid>%s", copySQL, prefix, suffix)
	}
	if name := strings.TrimSuffix(strings.TrimPrefix(copySQL, prefix), suffix); !regexp.MustCompile(`^` + uuidV7 + `$`).MatchString(name) {
		t.Fatalf("file name %q is not a version 7 UUID", name)
	}
}

// ColumnOptions: include_metadata, include_key and payload_format change
// the columns of both tables and what lands in them; verbose_logging logs
// every batch at info. payload_format = "json" falls back to text with a
// warning at open.
func ColumnOptions(t *testing.T, d sinkdriver.Driver, _ *Env) { // each case has a destination of its own
	binary := Batch("bin", 0, 5)
	binary.Schema = "raw"
	binary.Records[1].Payload = []byte{0xff, 0x00, 0xfe, 0x80}
	binary.Records[2].Payload = []byte{}
	utf8 := func(topic string) sinkdriver.Batch {
		b := Batch(topic, 0, 5)
		b.Records[1].Payload = []byte(`{"name":"größe ✓"}`)
		return b
	}
	textNoMeta := []string{specColumns[0], specColumns[5], "payload character varying(65535)", specColumns[7]}
	for _, tc := range []struct {
		table   string
		opts    map[string]any
		b       sinkdriver.Batch
		columns []string // pg_table_def
		meta    bool
		key     bool
		text    bool
		warn    string // a line the open logs
	}{
		{"defaults_varbyte", map[string]any{"verbose_logging": true}, binary, specColumns, true, true, false, ""},
		{"no_metadata", map[string]any{"include_metadata": false}, Batch("m", 0, 4),
			[]string{specColumns[0], specColumns[5], specColumns[6], specColumns[7]}, false, true, false, ""},
		{"no_key", map[string]any{"include_key": false}, Batch("k", 0, 4),
			append(slices.Clone(specColumns[:5]), specColumns[6:]...), true, false, false, ""},
		{"bare_text", map[string]any{"include_metadata": false, "include_key": false, "payload_format": "text"}, Batch("b", 0, 4),
			[]string{specColumns[0], "payload character varying(65535)", specColumns[7]}, false, false, true, ""},
		{"text_no_metadata", map[string]any{"include_metadata": false, "payload_format": "text"}, utf8("events"),
			textNoMeta, false, true, true, ""},
		{"json_falls_back_to_text", map[string]any{"include_metadata": false, "payload_format": "json"}, utf8("events"),
			textNoMeta, false, true, true, "WARN Json is not supported, falling back to Text"},
	} {
		t.Run(tc.table, func(t *testing.T) {
			e := NewEnv(t)
			if !tc.text {
				e.needBytes()
			}
			table := e.Table(tc.table)
			cfg := e.Config(map[string]any{"target_table": table})
			for k, v := range tc.opts {
				cfg[k] = v
			}
			inst := e.Start(d).Open(tc.table, cfg)
			if tc.warn != "" && !slices.ContainsFunc(inst.Logs(), func(l string) bool { return strings.Contains(l, tc.warn) }) {
				t.Errorf("open did not log %q:\n%s", tc.warn, strings.Join(inst.Logs(), "\n"))
			}
			consume(t, inst, tc.b)
			for _, tbl := range []string{table, "staging_" + table} {
				if got := e.TableDef(tbl); !slices.Equal(got, tc.columns) {
					t.Errorf("pg_table_def of %s:\n%s\nwant\n%s", tbl, strings.Join(got, "\n"), strings.Join(tc.columns, "\n"))
				}
			}
			rows := e.Rows(table)
			if len(rows) != len(tc.b.Records) {
				t.Fatalf("%s: %d rows", table, len(rows))
			}
			for i, rec := range tc.b.Records {
				var payload any = rec.Payload
				if tc.text {
					payload = string(rec.Payload)
				}
				checkRow(t, rows[i], tc.b.Topic, rec, tc.meta, tc.key, payload)
			}
			// verbose_logging: every batch at info; otherwise at debug,
			// which the runtime does not see at its default level.
			var batchLines []string
			for _, l := range inst.Logs() {
				if strings.Contains(l, " batch loaded ") {
					batchLines = append(batchLines, l)
				}
			}
			verbose := tc.opts["verbose_logging"] == true
			wantLine := fmt.Sprintf("INFO batch loaded topic=%s table=%s records=%d offsets=0..%d chunks=1 inserted=%d skipped_duplicates=0 duration=",
				tc.b.Topic, table, len(tc.b.Records), len(tc.b.Records)-1, len(tc.b.Records))
			if verbose && (len(batchLines) != 1 || !strings.HasPrefix(batchLines[0], wantLine)) {
				t.Errorf("%s: batch log lines %q, want one starting %q", table, batchLines, wantLine)
			}
			if !verbose && len(batchLines) != 0 {
				t.Errorf("%s: batch logged without verbose_logging: %q", table, batchLines)
			}
		})
	}
}

// PayloadsAreStoredAsGiven: the sink stores payload bytes as given and
// never parses them, whatever the batch's schema: on a json topic an empty
// payload (a tombstone of a compacted topic) lands as an empty value, not
// NULL and not an error, and a payload that is not JSON lands as its
// bytes. With payload_format = "text" both land as strings; text still
// refuses what VARCHAR cannot hold.
func PayloadsAreStoredAsGiven(t *testing.T, d sinkdriver.Driver, e *Env) {
	e.needBytes()
	rt := e.Start(d)
	payloads := [][]byte{
		nil,                      // tombstone
		{},                       // empty, but not absent
		[]byte(`{"order":2`),     // truncated JSON
		[]byte("plain text, ok"), // not JSON at all
		[]byte(`{"order":4}`),    // JSON
	}
	b := Batch("tombstones", 0, len(payloads))
	for i, p := range payloads {
		b.Records[i].Payload = p
	}
	varbyte := rt.Open("asis", e.Config(map[string]any{"target_table": e.Table("asis_{topic}")}))
	text := rt.Open("asis_text", e.Config(map[string]any{"target_table": e.Table("asist_{topic}"), "payload_format": "text"}))

	consume(t, varbyte, b)
	rows := e.Rows(e.Table("asis_tombstones"))
	if len(rows) != len(payloads) {
		t.Fatalf("%d rows, want %d", len(rows), len(payloads))
	}
	for i, r := range rows {
		want := payloads[i]
		if want == nil {
			want = []byte{}
		}
		checkRow(t, r, "tombstones", b.Records[i], true, true, want)
	}

	consume(t, text, b)
	rows = e.Rows(e.Table("asist_tombstones"))
	if len(rows) != len(payloads) {
		t.Fatalf("%d rows, want %d", len(rows), len(payloads))
	}
	for i, r := range rows {
		checkRow(t, r, "tombstones", b.Records[i], true, true, string(payloads[i]))
	}

	// A binary payload on a json topic: stored by varbyte, refused by text.
	bin := Batch("binary", 0, 2)
	bin.Records[1].Payload = []byte{0xff, 0x00, 0xfe}
	consume(t, varbyte, bin)
	if got := e.Rows(e.Table("asis_binary")); len(got) != 2 || !bytes.Equal(got[1]["payload"].([]byte), []byte{0xff, 0x00, 0xfe}) {
		t.Errorf("binary payload: %v", got)
	}
	WantStatus(t, text.Consume(bin), hostclient.StatusFatal, `record at topic "binary" offset 1 cannot be loaded into Redshift: column payload is not valid UTF-8`)
}
