package rsemu_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// sinkRow is what the Redshift sink writes: every column a string except
// the partition and the payload bytes.
type sinkRow struct {
	ID            string  `parquet:"id"`
	PicoOffset    string  `parquet:"pico_offset"`
	PicoTimestamp string  `parquet:"pico_timestamp"`
	PicoTopic     string  `parquet:"pico_topic"`
	PicoPartition int64   `parquet:"pico_partition"`
	PicoKey       *string `parquet:"pico_key,optional"`
	Payload       []byte  `parquet:"payload"`
	CreatedAt     string  `parquet:"created_at"`
}

const sinkCols = "id, pico_offset, pico_timestamp, pico_topic, pico_partition, pico_key, payload, created_at"

const sinkDDL = `CREATE TABLE IF NOT EXISTS %s (
  id VARCHAR(512),
  pico_offset VARCHAR(20),
  pico_timestamp VARCHAR(20),
  pico_topic VARCHAR,
  pico_partition BIGINT,
  pico_key VARCHAR(MAX),
  payload VARBYTE(16777216),
  created_at VARCHAR
)`

func createSinkTable(t *testing.T, e *env, conn *pgx.Conn, table string) {
	t.Helper()
	e.exec(t, conn, strings.Replace(sinkDDL, "%s", table, 1))
}

func sinkRows(topic string, from, n int) []sinkRow {
	key := "a2V5"
	rows := make([]sinkRow, n)
	for i := range rows {
		off := from + i
		rows[i] = sinkRow{
			ID:            topic + ":0:" + itoa(off),
			PicoOffset:    itoa(off),
			PicoTimestamp: "1700000000000",
			PicoTopic:     topic,
			PicoPartition: 0,
			Payload:       []byte("payload-" + itoa(off) + "-\x00\xff"),
			CreatedAt:     "2024-01-01T00:00:00Z",
		}
		if i%2 == 0 {
			rows[i].PicoKey = &key
		}
	}
	return rows
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestCopyParquetHappyPath(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, `"staging_orders.eu"`)
	rows := sinkRows("orders.eu", 0, 25)
	e.put(t, "redshift/orders/0001.parquet", writeParquet(t, rows))

	tag := e.exec(t, conn, e.copySQL(`"staging_orders.eu"`, sinkCols, "redshift/orders/0001.parquet"))
	if tag.RowsAffected() != 25 {
		t.Errorf("COPY tag %q", tag)
	}
	type got struct {
		ID        string
		Key       *string
		Payload   []byte
		Partition int64
	}
	res, err := conn.Query(e.ctx, `SELECT id, pico_key, payload, pico_partition FROM "staging_orders.eu" ORDER BY pico_offset::bigint`)
	if err != nil {
		t.Fatal(err)
	}
	all, err := pgx.CollectRows(res, pgx.RowToStructByPos[got])
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(rows) {
		t.Fatalf("loaded %d rows, want %d", len(all), len(rows))
	}
	for i, r := range all {
		w := rows[i]
		if r.ID != w.ID || !bytes.Equal(r.Payload, w.Payload) || r.Partition != 0 {
			t.Fatalf("row %d: %+v, want %+v", i, r, w)
		}
		if (r.Key == nil) != (w.PicoKey == nil) {
			t.Fatalf("row %d key: %v, want %v", i, r.Key, w.PicoKey)
		}
	}

	// IAM_ROLE and the other FORMAT spellings work the same.
	for _, sql := range []string{
		`COPY "staging_orders.eu" (` + sinkCols + `) FROM '` + e.url("redshift/orders/0001.parquet") + `' IAM_ROLE '` + e.role + `' FORMAT PARQUET`,
		`COPY "staging_orders.eu" FROM '` + e.url("redshift/orders/0001.parquet") + `' IAM_ROLE '` + e.role + `' PARQUET`,
	} {
		e.exec(t, conn, sql)
	}
	if n := count(t, e, conn, `"staging_orders.eu"`); n != 75 {
		t.Fatalf("rows after three COPYs: %d", n)
	}
}

func TestCopyLoadsEveryObjectUnderThePrefix(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	e.put(t, "in/batch-1.parquet", writeParquet(t, sinkRows("t", 0, 3)))
	e.put(t, "in/batch-2.parquet", writeParquet(t, sinkRows("t", 3, 4)))
	e.put(t, "in-other/x.parquet", writeParquet(t, sinkRows("t", 100, 5)))
	e.put(t, "other/batch-3.parquet", writeParquet(t, sinkRows("t", 200, 6)))

	e.exec(t, conn, e.copySQL("stage", sinkCols, "in/"))
	if n := count(t, e, conn, "stage"); n != 7 {
		t.Fatalf("prefix in/ loaded %d rows, want 7", n)
	}
	// Key-prefix semantics, not directories: "in" matches in/ and in-other/.
	e.exec(t, conn, `TRUNCATE stage`)
	e.exec(t, conn, e.copySQL("stage", sinkCols, "in"))
	if n := count(t, e, conn, "stage"); n != 12 {
		t.Fatalf("prefix in loaded %d rows, want 12", n)
	}
	_, err := conn.Exec(e.ctx, e.copySQL("stage", sinkCols, "nothing-here/"))
	pgErr(t, err, "XX000", "The specified S3 prefix 'nothing-here/' does not exist")
}

func TestCopyColumnCountMustMatch(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	type short struct {
		ID string `parquet:"id"`
	}
	e.put(t, "short.parquet", writeParquet(t, []short{{"a"}}))
	_, err := conn.Exec(e.ctx, e.copySQL("stage", sinkCols, "short.parquet"))
	pe := pgErr(t, err, "XX000", "Spectrum Scan Error")
	if !strings.Contains(pe.Detail, "Unmatched number of columns between table and file. Table columns: 8, Data columns: 1") {
		t.Fatalf("detail: %s", pe.Detail)
	}
	// With a column list of the right length it loads.
	e.exec(t, conn, e.copySQL("stage", "id", "short.parquet"))
	if n := count(t, e, conn, "stage"); n != 1 {
		t.Fatalf("rows: %d", n)
	}
}

func TestCopyIncompatibleParquetType(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE t (id VARCHAR(10))`)
	type ints struct {
		ID int64 `parquet:"id"`
	}
	e.put(t, "ints.parquet", writeParquet(t, []ints{{1}}))
	_, err := conn.Exec(e.ctx, e.copySQL("t", "id", "ints.parquet"))
	pe := pgErr(t, err, "XX000", "Spectrum Scan Error")
	if !strings.Contains(pe.Detail, "incompatible Parquet schema") {
		t.Fatalf("detail: %s", pe.Detail)
	}
}

func TestCopyOverlongValueFailsAndIsLogged(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE short_text (id VARCHAR(8), body VARCHAR(4))`)
	type row struct {
		ID   string `parquet:"id"`
		Body string `parquet:"body"`
	}
	// Row 2 is 3 characters but 6 bytes: too long for VARCHAR(4).
	e.put(t, "long.parquet", writeParquet(t, []row{{"r1", "ok"}, {"r2", "ééé"}, {"r3", "ok"}}))

	tx, err := conn.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(e.ctx, e.copySQL("short_text", "id, body", "long.parquet"))
	pe := pgErr(t, err, "XX000", "String length exceeds DDL length")
	if !strings.Contains(pe.Detail, "sys_load_error_detail") {
		t.Errorf("detail: %s", pe.Detail)
	}
	// The failed COPY aborted the transaction.
	_, err = tx.Exec(e.ctx, `SELECT 1`)
	pgErr(t, err, "25P02", "current transaction is aborted")
	_ = tx.Rollback(e.ctx)
	if n := count(t, e, conn, "short_text"); n != 0 {
		t.Fatalf("a failed COPY loaded %d rows", n)
	}

	// The error row survives the rollback, in both system views.
	var file, col, typ, length, msg string
	var line, code int
	err = conn.QueryRow(e.ctx, `SELECT trim(file_name), line_number, trim(column_name), trim(column_type),
		trim(column_length), error_code, trim(error_message) FROM sys_load_error_detail ORDER BY start_time DESC LIMIT 1`).
		Scan(&file, &line, &col, &typ, &length, &code, &msg)
	if err != nil {
		t.Fatal(err)
	}
	if file != e.url("long.parquet") || line != 2 || col != "body" || typ != "varchar" || length != "4" ||
		code != 1204 || msg != "String length exceeds DDL length" {
		t.Fatalf("sys_load_error_detail: %s %d %s %s %s %d %s", file, line, col, typ, length, code, msg)
	}
	var reason, raw string
	if err := conn.QueryRow(e.ctx, `SELECT trim(err_reason), trim(raw_field_value) FROM stl_load_errors`).Scan(&reason, &raw); err != nil {
		t.Fatal(err)
	}
	if reason != "String length exceeds DDL length" || raw != "ééé" {
		t.Fatalf("stl_load_errors: %q %q", reason, raw)
	}
}

func TestCopyAuthorization(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	e.put(t, "a.parquet", writeParquet(t, sinkRows("t", 0, 1)))
	src := e.url("a.parquet")
	for name, auth := range map[string]string{
		"not attached":   `IAM_ROLE 'arn:aws:iam::999999999999:role/Other'`,
		"malformed arn":  `IAM_ROLE 'arn:aws:iam::12345:role/RedshiftCopy'`,
		"credentials":    `CREDENTIALS 'aws_iam_role=arn:aws:iam::999999999999:role/Other'`,
		"not a role arn": `CREDENTIALS 'aws_iam_role=arn:aws:iam::123456789012:user/RedshiftCopy'`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := conn.Exec(e.ctx, `COPY stage FROM '`+src+`' `+auth+` FORMAT AS PARQUET`)
			pgErr(t, err, "XX000", "Not authorized to get credentials of role arn:aws:iam::")
		})
	}
	_, err := conn.Exec(e.ctx, `COPY stage FROM '`+src+`' CREDENTIALS 'nonsense' FORMAT AS PARQUET`)
	pgErr(t, err, "XX000", "Invalid credentials")
	_, err = conn.Exec(e.ctx, `COPY stage FROM '`+src+`' FORMAT AS PARQUET`)
	pgErr(t, err, "XX000", "Invalid credentials")
}

func TestCopyRejectsOptionsParquetDoesNotTake(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	e.put(t, "a.parquet", writeParquet(t, sinkRows("t", 0, 1)))
	base := `COPY stage FROM '` + e.url("a.parquet") + `' IAM_ROLE '` + e.role + `' FORMAT AS PARQUET `
	for _, tc := range []struct{ opt, msg string }{
		{`REGION 'eu-west-1'`, "REGION argument is not supported for PARQUET based COPY"},
		{`REGION AS 'eu-west-1'`, "REGION argument is not supported for PARQUET based COPY"},
		{`DELIMITER ','`, "DELIMITER argument is not supported for PARQUET based COPY"},
		{`IGNOREHEADER 1`, "IGNOREHEADER argument is not supported for PARQUET based COPY"},
		{`GZIP`, "GZIP argument is not supported for PARQUET based COPY"},
		{`MAXERROR 10`, "MAXERROR argument is not supported for PARQUET based COPY"},
		// Redshift never applies compression encodings on a columnar COPY,
		// and COMPUPDATE is not among the parameters it takes with Parquet.
		{`COMPUPDATE OFF`, "COMPUPDATE argument is not supported for PARQUET based COPY"},
		{`STATUPDATE OFF COMPUPDATE OFF`, "COMPUPDATE argument is not supported for PARQUET based COPY"},
	} {
		_, err := conn.Exec(e.ctx, base+tc.opt)
		pgErr(t, err, "0A000", tc.msg)
	}
	// Not Parquet at all: the emulator only does Parquet.
	_, err := conn.Exec(e.ctx, `COPY stage FROM '`+e.url("a.parquet")+`' IAM_ROLE '`+e.role+`' CSV`)
	pgErr(t, err, "0A000", "COPY in CSV")
	_, err = conn.Exec(e.ctx, `COPY stage FROM '`+e.url("a.parquet")+`' IAM_ROLE '`+e.role+`' DELIMITER '|'`)
	pgErr(t, err, "0A000", "default delimited text format")
	// STATUPDATE is allowed with Parquet, alone or with ON/OFF/TRUE/FALSE,
	// before or after the format.
	for _, opt := range []string{`STATUPDATE OFF`, `STATUPDATE ON`, `STATUPDATE FALSE`, `STATUPDATE TRUE`, `STATUPDATE`} {
		e.exec(t, conn, base+opt)
	}
	e.exec(t, conn, `COPY stage FROM '`+e.url("a.parquet")+`' IAM_ROLE '`+e.role+`' STATUPDATE OFF FORMAT AS PARQUET`)
	_, err = conn.Exec(e.ctx, base+`STATUPDATE MAYBE`)
	pgErr(t, err, "42601", "syntax error")
}

func TestCopyJoinsTheClientTransaction(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	e.put(t, "a.parquet", writeParquet(t, sinkRows("t", 0, 5)))

	tx, err := conn.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, e.copySQL("stage", sinkCols, "a.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, e, conn, "stage"); n != 0 {
		t.Fatalf("rolled-back COPY left %d rows", n)
	}

	tx, err = conn.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, e.copySQL("stage", sinkCols, "a.parquet")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, `INSERT INTO stage (id) SELECT id || '-copy' FROM stage`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, e, conn, "stage"); n != 10 {
		t.Fatalf("committed COPY + INSERT: %d rows", n)
	}
}

func TestCopyTypedColumns(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE typed (i SMALLINT, b BOOLEAN, d DOUBLE PRECISION, ts TIMESTAMP, day DATE, c CHAR(2) NOT NULL)`)
	type row struct {
		I   int32     `parquet:"i"`
		B   bool      `parquet:"b"`
		D   float64   `parquet:"d"`
		TS  time.Time `parquet:"ts,timestamp(microsecond)"`
		Day int32     `parquet:"day,date"` // days since 1970-01-01
		C   *string   `parquet:"c,optional"`
	}
	when := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	days := int32(when.Unix() / 86400)
	ab := "ab"
	e.put(t, "ok.parquet", writeParquet(t, []row{{I: 7, B: true, D: 1.5, TS: when, Day: days, C: &ab}}))
	e.exec(t, conn, `COPY typed FROM '`+e.url("ok.parquet")+`' IAM_ROLE '`+e.role+`' FORMAT AS PARQUET`)
	var (
		i   int16
		b   bool
		d   float64
		ts  time.Time
		day time.Time
		c   string
	)
	if err := conn.QueryRow(e.ctx, `SELECT i, b, d, ts, day, c FROM typed`).Scan(&i, &b, &d, &ts, &day, &c); err != nil {
		t.Fatal(err)
	}
	if i != 7 || !b || d != 1.5 || !ts.Equal(when) || day.Format("2006-01-02") != "2024-05-06" || c != "ab" {
		t.Fatalf("typed row: %v %v %v %v %v %q", i, b, d, ts, day, c)
	}

	e.put(t, "overflow.parquet", writeParquet(t, []row{{I: 40000, TS: when, Day: days, C: &ab}}))
	_, err := conn.Exec(e.ctx, `COPY typed FROM '`+e.url("overflow.parquet")+`' IAM_ROLE '`+e.role+`' FORMAT AS PARQUET`)
	pgErr(t, err, "XX000", "out of range for type smallint")

	e.put(t, "null.parquet", writeParquet(t, []row{{TS: when, Day: days}}))
	_, err = conn.Exec(e.ctx, `COPY typed FROM '`+e.url("null.parquet")+`' IAM_ROLE '`+e.role+`' FORMAT AS PARQUET`)
	pgErr(t, err, "XX000", "Missing data for not-null field")
}

// TestSinkChunkFlow runs one chunk the way the Redshift sink does — COPY
// into the staging twin, deduplicating INSERT ... SELECT into the target,
// TRUNCATE of the staging table — twice, as a replayed batch would.
func TestSinkChunkFlow(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, `"staging_orders_orders.eu"`)
	createSinkTable(t, e, conn, `"orders_orders.eu"`)
	rows := sinkRows("orders.eu", 0, 10)
	rows = append(rows, rows[3]) // a duplicate id inside the chunk
	e.put(t, "redshift/orders/chunk.parquet", writeParquet(t, rows))
	insert := `INSERT INTO "orders_orders.eu" (` + sinkCols + `)
SELECT ` + sinkCols + ` FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY id ORDER BY pico_offset) AS rn FROM "staging_orders_orders.eu"
) s
WHERE rn = 1 AND NOT EXISTS (SELECT 1 FROM "orders_orders.eu" t WHERE t.id = s.id)`
	if e.emu != nil {
		e.emu.ResetStatements()
	}
	for replay := 0; replay < 2; replay++ {
		e.exec(t, conn, e.copySQL(`"staging_orders_orders.eu"`, sinkCols, "redshift/orders/chunk.parquet"))
		tag := e.exec(t, conn, insert)
		if want := int64(10 * (1 - replay)); tag.RowsAffected() != want {
			t.Errorf("replay %d inserted %d rows, want %d", replay, tag.RowsAffected(), want)
		}
		e.exec(t, conn, `TRUNCATE "staging_orders_orders.eu"`)
	}
	if n := count(t, e, conn, `"orders_orders.eu"`); n != 10 {
		t.Fatalf("target rows: %d", n)
	}
	if n := count(t, e, conn, `"staging_orders_orders.eu"`); n != 0 {
		t.Fatalf("staging rows: %d", n)
	}
	if e.emu != nil {
		for _, re := range []string{`(?i)^COPY`, `(?i)^INSERT`, `(?i)^TRUNCATE`} {
			if n := e.emu.CountStatements(re); n != 2 {
				t.Errorf("%s: %d statements, want one per chunk", re, n)
			}
		}
	}
}
