package redshift_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Integration tests against the Redshift emulator (plugins/redshift/rsemu) with the
// services of buildscripts/services.sh.

func TestLoadRowsExactlyAsSpecified(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("happy", r.config(map[string]any{"target_table": "orders_eu", "batch_size": 100}))

	// pg_table_def shows both tables with the spec's types.
	rs, err := r.pg.Query(r.ctx, `SELECT tablename, "column", type FROM rsemu_catalog.pg_table_def WHERE tablename IN ('orders_eu', 'staging_orders_eu') ORDER BY tablename, "column"`)
	if err != nil {
		t.Fatal(err)
	}
	var defs []string
	for rs.Next() {
		var tbl, col, typ string
		if err := rs.Scan(&tbl, &col, &typ); err != nil {
			t.Fatal(err)
		}
		defs = append(defs, tbl+"."+col+" "+typ)
	}
	want := []string{
		"created_at character varying(256)", "id character varying(512)", "payload varbyte(16777216)",
		"pico_key character varying(65535)", "pico_offset character varying(20)", "pico_partition bigint",
		"pico_timestamp character varying(20)", "pico_topic character varying(256)",
	}
	var wantDefs []string
	for _, tbl := range []string{"orders_eu", "staging_orders_eu"} {
		for _, w := range want {
			wantDefs = append(wantDefs, tbl+"."+w)
		}
	}
	if strings.Join(defs, "\n") != strings.Join(wantDefs, "\n") {
		t.Fatalf("pg_table_def:\n%s\nwant\n%s", strings.Join(defs, "\n"), strings.Join(wantDefs, "\n"))
	}

	r.emu.ResetStatements()
	start := time.Now().UTC().Truncate(time.Millisecond)
	b := batch("orders.eu", 40, 250) // three chunks: 100, 100, 50
	b.Records[3].Key = []byte{}      // an empty key is a key
	b.Records[5].Payload = []byte{}  // an empty payload is a payload
	b.Schema = "raw"
	mustConsume(t, h, b)
	end := time.Now().UTC()

	got := r.rows("orders_eu", true, true)
	if len(got) != 250 {
		t.Fatalf("%d rows, want 250", len(got))
	}
	byID := map[string]row{}
	for _, w := range got {
		byID[w.ID] = w
	}
	createdAt := map[string]int{}
	for i, rec := range b.Records {
		id := fmt.Sprintf("orders.eu:0:%d", rec.Offset)
		w, ok := byID[id]
		if !ok {
			t.Fatalf("id %s missing", id)
		}
		if *w.Offset != fmt.Sprint(rec.Offset) || *w.Timestamp != fmt.Sprint(rec.Timestamp) ||
			*w.Topic != "orders.eu" || *w.Partition != 0 || string(w.Payload) != string(rec.Payload) {
			t.Errorf("record %d: %+v", i, w)
		}
		switch {
		case rec.Key == nil && w.Key != nil:
			t.Errorf("record %d: key %q, want NULL", i, *w.Key)
		case rec.Key != nil && (w.Key == nil || *w.Key != base64.StdEncoding.EncodeToString(rec.Key)):
			t.Errorf("record %d: key %v, want %q", i, w.Key, base64.StdEncoding.EncodeToString(rec.Key))
		}
		if !rfc3339ms.MatchString(w.CreatedAt) {
			t.Fatalf("created_at %q is not RFC 3339 UTC with milliseconds", w.CreatedAt)
		}
		ts, err := time.Parse(time.RFC3339, w.CreatedAt)
		if err != nil || ts.Before(start) || ts.After(end) {
			t.Errorf("created_at %s not within the call (%s..%s)", w.CreatedAt, start, end)
		}
		createdAt[fmt.Sprint(i/100)+"/"+w.CreatedAt]++
	}
	// One created_at per chunk: each chunk's rows share one value.
	for k, n := range createdAt {
		if n != 100 && n != 50 {
			t.Errorf("created_at %s covers %d rows of its chunk", k, n)
		}
	}
	if len(createdAt) != 3 {
		t.Errorf("%d (chunk, created_at) pairs, want 3: %v", len(createdAt), createdAt)
	}

	if n := r.count("staging_orders_eu"); n != 0 {
		t.Errorf("staging holds %d rows after the load", n)
	}
	if objs := r.objects(""); len(objs) != 0 {
		t.Errorf("files left in S3: %v", objs)
	}
	chunk := "BEGIN LOCK COPY INSERT DELETE COMMIT"
	if got := r.loadStatements(); got != strings.TrimSpace(strings.Repeat(chunk+" ", 3)) {
		t.Errorf("statements %s", got)
	}
	m := metrics(t, h)
	wantM := map[string]float64{"chunks": 3, "files_uploaded": 3, "rows_copied": 250, "rows_inserted": 250,
		"rows_skipped_duplicates": 0, "copy_retries": 0, "files_deleted": 3, "files_archived": 0, "cleanup_failures": 0}
	for k, v := range wantM {
		if m[k] != v {
			t.Errorf("metric %s = %v, want %v", k, m[k], v)
		}
	}
	if m["s3_bytes_uploaded"] <= 0 {
		t.Errorf("s3_bytes_uploaded %v", m["s3_bytes_uploaded"])
	}
}

func TestCopyStatementText(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("copy_text", r.config(map[string]any{"target_table": "t_{topic}", "s3_prefix": "/pre/fix/"}))
	r.emu.ResetStatements()
	mustConsume(t, h, batch("Orders", 0, 3))
	var copySQL string
	for _, s := range r.emu.Statements() {
		if strings.HasPrefix(s, "COPY") {
			copySQL = s
		}
	}
	prefix := `COPY "staging_t_Orders" (id, pico_offset, pico_timestamp, pico_topic, pico_partition, pico_key, payload, created_at) FROM 's3://` +
		r.bucket + `/pre/fix/`
	suffix := `.parquet' CREDENTIALS 'aws_iam_role=` + rsemuRole + `' FORMAT AS PARQUET STATUPDATE OFF`
	if !strings.HasPrefix(copySQL, prefix) || !strings.HasSuffix(copySQL, suffix) {
		t.Fatalf("COPY text:\n%s\nwant\n%s<uuid>%s", copySQL, prefix, suffix)
	}
	name := strings.TrimSuffix(strings.TrimPrefix(copySQL, prefix), suffix)
	if len(name) != 36 || name[14] != '7' {
		t.Fatalf("file name %q is not a version 7 UUID", name)
	}
	// Redshift folds quoted identifiers to lower case; the emulator too.
	if n := r.count("t_orders"); n != 3 {
		t.Fatalf("t_orders has %d rows", n)
	}
}

func TestTextPayload(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			r := newRig(t)
			h, logs := r.open("text", r.config(map[string]any{"target_table": "events", "payload_format": format, "include_metadata": false}))
			if format == "json" && !strings.Contains(logs.String(), "WARN Json is not supported, falling back to Text") {
				t.Errorf("json warning missing:\n%s", logs.String())
			}
			b := batch("events", 0, 5)
			b.Records[1].Payload = []byte(`{"name":"größe ✓"}`)
			mustConsume(t, h, b)
			var typ string
			if err := r.pg.QueryRow(r.ctx, `SELECT type FROM rsemu_catalog.pg_table_def WHERE tablename = 'events' AND "column" = 'payload'`).Scan(&typ); err != nil {
				t.Fatal(err)
			}
			if typ != "character varying(65535)" {
				t.Fatalf("payload column is %s", typ)
			}
			rows := r.rows("events", false, true)
			if len(rows) != 5 || string(rows[1].Payload) != `{"name":"größe ✓"}` {
				t.Fatalf("rows %+v", rows)
			}
		})
	}
}
