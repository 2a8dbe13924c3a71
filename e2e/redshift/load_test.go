package redshift_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostdriver"
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

// checkRow compares a row with the record it came from, per "What lands in
// the table"; payload is the column's content for the record's bytes.
func checkRow(t *testing.T, got row, topic string, rec hostdriver.Record, metadata, key bool, payload any) {
	t.Helper()
	want := row{"id": fmt.Sprintf("%s:0:%d", topic, rec.Offset), "payload": payload, "created_at": got["created_at"]}
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

// The spec's quick start, unchanged but for where the cluster and the
// bucket are: a templated table per last topic segment, text payloads.
func TestQuickStart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	inst := w.open("orders_rs", w.config(map[string]any{"payload_format": "text"}))
	if n := w.emu.CountStatements(`(?i)create table`); n != 0 {
		t.Fatalf("open created %d tables for a templated target_table", n)
	}

	eu := batch("orders.eu", 40, 250) // three chunks of the default batch_size: 100, 100, 50
	eu.Records[249].Offset = 1 << 40  // offsets are decimal strings, whatever their size
	eu.Records[7].Payload = []byte(`{"name":"größe ✓","note":"tab\there"}`)
	us := batch("orders.us", 0, 3)
	start := time.Now().UTC().Truncate(time.Millisecond)
	consume(t, inst, eu)
	consume(t, inst, us)
	end := time.Now().UTC()

	for _, tbl := range []string{"orders_eu", "staging_orders_eu", "orders_us", "staging_orders_us"} {
		want := slices.Clone(specColumns)
		want[6] = "payload character varying(65535)" // payload_format = "text": VARCHAR(MAX)
		if got := w.tableDef(tbl); !slices.Equal(got, want) {
			t.Errorf("pg_table_def of %s:\n%s\nwant\n%s", tbl, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	for _, c := range []struct {
		table string
		b     hostdriver.Batch
	}{{"orders_eu", eu}, {"orders_us", us}} {
		rows := w.rows(c.table)
		if len(rows) != len(c.b.Records) {
			t.Fatalf("%s: %d rows, want %d", c.table, len(rows), len(c.b.Records))
		}
		perChunk := map[int]map[string]bool{}
		for i, rec := range c.b.Records {
			checkRow(t, rows[i], c.b.Topic, rec, true, true, string(rec.Payload))
			ca := rows[i]["created_at"].(string)
			ts, err := time.Parse(time.RFC3339, ca)
			if err != nil || ts.Before(start) || ts.After(end) {
				t.Errorf("created_at %s is not within the consume calls (%s .. %s)", ca, start, end)
			}
			if perChunk[i/100] == nil {
				perChunk[i/100] = map[string]bool{}
			}
			perChunk[i/100][ca] = true
		}
		for chunk, values := range perChunk {
			if len(values) != 1 {
				t.Errorf("%s chunk %d has created_at values %v, want one", c.table, chunk, values)
			}
		}
	}
	// The spec's edge cases, spelled out: no key is NULL, an empty key is
	// an empty string, a key is base64; a large offset stays a decimal.
	rows := w.rows("orders_eu")
	if rows[0]["pico_key"] != nil || rows[1]["pico_key"] != "" || rows[2]["pico_key"] != base64.StdEncoding.EncodeToString([]byte("customer-42")) {
		t.Errorf("keys %#v %#v %#v: want NULL, '', base64 of customer-42", rows[0]["pico_key"], rows[1]["pico_key"], rows[2]["pico_key"])
	}
	if last := rows[249]; last["id"] != "orders.eu:0:1099511627776" || last["pico_offset"] != "1099511627776" {
		t.Errorf("large offset: %v", last)
	}

	// Each chunk: one COPY of one file, then the deduplicating INSERT, in
	// one locked transaction; nothing left in staging or S3.
	var seq []string
	for _, s := range strings.Fields(firstWords(w.emu)) {
		if s != "CREATE" && s != "SELECT" && s != "SET" {
			seq = append(seq, s)
		}
	}
	// Each of the sink's connections first sets the default statement_timeout,
	// 10 minutes (the test's own connections through the emulator do not).
	first := map[int]string{}
	for _, s := range w.emu.StatementLog() {
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
	if n := w.emu.CountStatements(`(?i)^create table if not exists`); n != 4 {
		t.Errorf("%d CREATE TABLE IF NOT EXISTS, want 4 (two tables per resolved name)", n)
	}
	copyRE := regexp.MustCompile(`^COPY "staging_orders_(eu|us)" \(id, pico_offset, pico_timestamp, pico_topic, pico_partition, pico_key, payload, created_at\) ` +
		`FROM 's3://` + regexp.QuoteMeta(w.bucket) + `/redshift/orders/` + uuidV7 + `\.parquet' ` +
		`CREDENTIALS 'aws_iam_role=` + regexp.QuoteMeta(rsemu.DefaultRole) + `' FORMAT AS PARQUET STATUPDATE OFF$`)
	copies := 0
	for _, s := range w.emu.Statements() {
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
	for _, tbl := range []string{"staging_orders_eu", "staging_orders_us"} {
		if n := w.count(tbl); n != 0 {
			t.Errorf("%s holds %d rows", tbl, n)
		}
	}
	if objs := w.objects(""); len(objs) != 0 {
		t.Errorf("files left in S3 with archive = false: %v", objs)
	}
	m := sinkMetrics(t, inst)
	for k, v := range map[string]float64{"chunks": 4, "files_uploaded": 4, "rows_copied": 253, "rows_inserted": 253,
		"rows_skipped_duplicates": 0, "copy_retries": 0, "files_deleted": 4, "files_archived": 0, "cleanup_failures": 0} {
		if m[k] != v {
			t.Errorf("metric %s = %v, want %v", k, m[k], v)
		}
	}
}

// include_metadata, include_key and payload_format change the columns of
// both tables and what lands in them.
func TestColumnOptions(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	binary := batch("bin", 0, 5)
	binary.Schema = "raw"
	binary.Records[1].Payload = []byte{0xff, 0x00, 0xfe, 0x80}
	binary.Records[2].Payload = []byte{}
	for _, tc := range []struct {
		table   string
		opts    map[string]any
		b       hostdriver.Batch
		columns []string // pg_table_def
		meta    bool
		key     bool
		text    bool
	}{
		{"defaults_varbyte", map[string]any{"verbose_logging": true}, binary, specColumns, true, true, false},
		{"no_metadata", map[string]any{"include_metadata": false}, batch("m", 0, 4),
			[]string{specColumns[0], specColumns[5], specColumns[6], specColumns[7]}, false, true, false},
		{"no_key", map[string]any{"include_key": false}, batch("k", 0, 4),
			append(slices.Clone(specColumns[:5]), specColumns[6:]...), true, false, false},
		{"bare_text", map[string]any{"include_metadata": false, "include_key": false, "payload_format": "text"}, batch("b", 0, 4),
			[]string{specColumns[0], "payload character varying(65535)", specColumns[7]}, false, false, true},
	} {
		cfg := w.config(map[string]any{"target_table": tc.table})
		for k, v := range tc.opts {
			cfg[k] = v
		}
		inst := w.open(tc.table, cfg)
		consume(t, inst, tc.b)
		for _, tbl := range []string{tc.table, "staging_" + tc.table} {
			if got := w.tableDef(tbl); !slices.Equal(got, tc.columns) {
				t.Errorf("pg_table_def of %s:\n%s\nwant\n%s", tbl, strings.Join(got, "\n"), strings.Join(tc.columns, "\n"))
			}
		}
		rows := w.rows(tc.table)
		if len(rows) != len(tc.b.Records) {
			t.Fatalf("%s: %d rows", tc.table, len(rows))
		}
		for i, rec := range tc.b.Records {
			var payload any = rec.Payload
			if tc.text {
				payload = string(rec.Payload)
			}
			checkRow(t, rows[i], tc.b.Topic, rec, tc.meta, tc.key, payload)
		}
		// verbose_logging: every batch at info; otherwise at debug, which
		// the runtime does not see at its default level.
		var batchLines []string
		for _, l := range inst.Logs() {
			if strings.HasPrefix(l.Message, "batch loaded ") {
				batchLines = append(batchLines, l.Level.String()+" "+l.Message)
			}
		}
		verbose := tc.opts["verbose_logging"] == true
		wantLine := fmt.Sprintf("INFO batch loaded topic=%s table=%s records=%d offsets=0..%d chunks=1 inserted=%d skipped_duplicates=0 duration=",
			tc.b.Topic, tc.table, len(tc.b.Records), len(tc.b.Records)-1, len(tc.b.Records))
		if verbose && (len(batchLines) != 1 || !strings.HasPrefix(batchLines[0], wantLine)) {
			t.Errorf("%s: batch log lines %q, want one starting %q", tc.table, batchLines, wantLine)
		}
		if !verbose && len(batchLines) != 0 {
			t.Errorf("%s: batch logged without verbose_logging: %q", tc.table, batchLines)
		}
	}
}

// describe() of the library lists every key of the spec's configuration
// table with its type, default and required flag, and flags the secrets.
func TestDescribe(t *testing.T) {
	t.Parallel()
	c := startConnector(t)
	var calls int
	doc, err := c.lib.Describe(hostdriver.OutCap(64), hostdriver.CallCount(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("describe called %d times with a 64-byte buffer, want 2 (BUFFER_TOO_SMALL, then the document)", calls)
	}
	var d struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		ABIVersion string `json:"abi_version"`
		Config     []struct {
			Key      string  `json:"key"`
			Type     string  `json:"type"`
			Default  *string `json:"default"`
			Required bool    `json:"required"`
			Secret   bool    `json:"secret"`
		} `json:"plugin_config"`
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if d.Name != "redshift_sink" || d.ABIVersion != "1.1" || d.Version == "" {
		t.Errorf("name %q abi %q version %q", d.Name, d.ABIVersion, d.Version)
	}
	// key, type, default ("-" for none), required, secret
	want := []string{
		"connection_string string - required secret",
		"target_table template - required -",
		"aws_iam_role string - required -",
		"s3_bucket string - required -",
		"s3_prefix string - required -",
		"aws_region string - required -",
		"s3_endpoint string - - -",
		"aws_access_key_id string - - secret",
		"aws_secret_access_key string - - secret",
		"batch_size int 100 - -",
		"max_connections int 5 - -",
		"include_metadata bool true - -",
		"include_key bool true - -",
		"payload_format string varbyte - -",
		"max_retries int 3 - -",
		"retry_delay string 1s - -",
		"statement_timeout duration 10m - -",
		"auth string password - -",
		"iam_cluster_identifier string - - -",
		"iam_workgroup_name string - - -",
		"iam_db_user string - - -",
		"iam_region string - - -",
		"iam_duration duration 15m - -",
		"archive bool false - -",
		"verbose_logging bool false - -",
	}
	var got []string
	for _, f := range d.Config {
		def, req, sec := "-", "-", "-"
		if f.Default != nil {
			def = *f.Default
		}
		if f.Required {
			req = "required"
		}
		if f.Secret {
			sec = "secret"
		}
		got = append(got, strings.Join([]string{f.Key, f.Type, def, req, sec}, " "))
	}
	if !slices.Equal(got, want) {
		t.Errorf("describe config:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if bytes.Contains([]byte(doc), []byte("REDACTED")) {
		t.Errorf("describe carries values: %s", doc)
	}
}

// Template "{topic}" with topics "orders" and "staging_orders": the second
// topic's table is the first one's staging twin. Whatever the sink does
// about the clash (refuse one of the two names, say), a batch it
// acknowledged must stay in its own table and no table may receive another
// topic's records. Both orders of first delivery are tried.
func TestTopicTableThatIsAnotherTopicsStagingTwin(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for i, topics := range [][]string{
		{"staging_c0_orders", "c0_orders"},
		{"c1_orders", "staging_c1_orders", "c1_orders"},
	} {
		inst := w.open(fmt.Sprintf("clash%d", i), w.config(map[string]any{"target_table": "{topic}", "s3_prefix": fmt.Sprintf("c%d", i)}))
		acked := map[string]bool{}
		var results []string
		for n, topic := range topics { // the table is the topic's name
			err := inst.Consume(batch(topic, uint64(10*n), 3))
			results = append(results, fmt.Sprintf("%s: %v", topic, err))
			if err == nil {
				acked[topic] = true
			}
		}
		if len(acked) == 0 {
			t.Fatalf("neither topic could be loaded: %q", results)
		}
		for n, topic := range topics {
			if strings.HasPrefix(topic, "staging_") && (acked[topic] || !strings.Contains(results[n], `starts with "staging_"`)) {
				t.Errorf("a topic whose table would be another table's staging twin must fail: %s", results[n])
			}
		}
		for _, table := range slices.Compact(slices.Sorted(slices.Values(topics))) {
			var n int
			if err := w.pg.QueryRow(w.ctx, `SELECT count(*) FROM pg_class WHERE relname = $1`, table).Scan(&n); err != nil || n == 0 {
				continue
			}
			for _, r := range w.rows(table) {
				if id := r["id"].(string); !strings.HasPrefix(id, table+":") {
					t.Errorf("table %s holds a record of another topic: %s (deliveries: %q)", table, id, results)
				}
			}
		}
		for n, topic := range topics {
			if !acked[topic] {
				continue
			}
			have := map[string]bool{}
			for _, r := range w.rows(topic) {
				have[r["id"].(string)] = true
			}
			for off := 10 * n; off < 10*n+3; off++ {
				if id := fmt.Sprintf("%s:0:%d", topic, off); !have[id] {
					t.Errorf("%s was acknowledged but is gone from table %s (deliveries: %q)", id, topic, results)
				}
			}
		}
	}
}

// The sink stores payload bytes as given and never parses them, whatever
// the batch's schema: on a json topic an empty payload (a tombstone of a
// compacted topic) lands as an empty value, not NULL and not an error, and
// a payload that is not JSON lands as its bytes. With payload_format =
// "text" both land as strings; text still refuses what VARCHAR cannot hold.
func TestPayloadsAreStoredAsGiven(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	payloads := [][]byte{
		nil,                      // tombstone
		{},                       // empty, but not absent
		[]byte(`{"order":2`),     // truncated JSON
		[]byte("plain text, ok"), // not JSON at all
		[]byte(`{"order":4}`),    // JSON
	}
	b := batch("tombstones", 0, len(payloads))
	for i, p := range payloads {
		b.Records[i].Payload = p
	}
	varbyte := w.open("asis", w.config(map[string]any{"target_table": "asis_{topic}"}))
	text := w.open("asis_text", w.config(map[string]any{"target_table": "asist_{topic}", "payload_format": "text"}))

	consume(t, varbyte, b)
	rows := w.rows("asis_tombstones")
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
	rows = w.rows("asist_tombstones")
	if len(rows) != len(payloads) {
		t.Fatalf("%d rows, want %d", len(rows), len(payloads))
	}
	for i, r := range rows {
		checkRow(t, r, "tombstones", b.Records[i], true, true, string(payloads[i]))
	}

	// A binary payload on a json topic: stored by varbyte, refused by text.
	bin := batch("binary", 0, 2)
	bin.Records[1].Payload = []byte{0xff, 0x00, 0xfe}
	consume(t, varbyte, bin)
	if got := w.rows("asis_binary"); len(got) != 2 || !bytes.Equal(got[1]["payload"].([]byte), []byte{0xff, 0x00, 0xfe}) {
		t.Errorf("binary payload: %v", got)
	}
	wantStatus(t, text.Consume(bin), hostdriver.StatusFatal, `record at topic "binary" offset 1 cannot be loaded into Redshift: column payload is not valid UTF-8`)
}
