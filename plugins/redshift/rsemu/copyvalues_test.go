package rsemu_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestCopyValuesLandExactly loads the values whose text needs care on the
// way to PostgreSQL (the emulator streams rows with COPY FROM STDIN):
// strings holding the text format's escapes, a string that reads "\N",
// bytes of every kind, REAL from a DOUBLE column (rounded as a cast to
// float4), decimals, timestamps with a time zone, NULLs. Each comes back
// exactly as written.
func TestCopyValuesLandExactly(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE vals (s VARCHAR(64), b VARBYTE(64), r REAL, r32 REAL, d DOUBLE PRECISION,
		n NUMERIC(10,2), tz TIMESTAMPTZ)`)
	type row struct {
		S   *string   `parquet:"s,optional"`
		B   []byte    `parquet:"b,optional"`
		R   float64   `parquet:"r"`
		R32 float32   `parquet:"r32"`
		D   float64   `parquet:"d"`
		N   int64     `parquet:"n,decimal(2:10)"`
		TZ  time.Time `parquet:"tz,timestamp(microsecond)"`
	}
	str := func(s string) *string { return &s }
	when := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	rows := []row{
		{S: str("tab\there\nnew\rline\\back\\\\slash"), B: []byte{0, '\\', '\n', '\t', 0xff, 'x'}, R: 0.1, R32: 0.1, D: 0.1, N: 12345, TZ: when},
		{S: str(`\N`), B: []byte(`\x00`), R: -3.4e38, R32: float32(math.SmallestNonzeroFloat32), D: math.Inf(-1), N: -5, TZ: when.Add(time.Hour)},
		{S: str(`\.`), B: []byte{}, R: 1e-40, R32: -0.0, D: math.NaN(), N: 0, TZ: time.Unix(0, 0)},
		{S: nil, B: nil, R: 16777217, R32: 3.4028235e38, D: math.MaxFloat64, N: 99999999, TZ: when},
		{S: str("é ü 日本"), B: bytes.Repeat([]byte{0x5c}, 64), R: math.Pi, R32: math.Pi, D: math.SmallestNonzeroFloat64, N: -99999999, TZ: when},
	}
	e.put(t, "vals.parquet", writeParquet(t, rows))
	if tag := e.exec(t, conn, e.copySQL("vals", "s, b, r, r32, d, n, tz", "vals.parquet")); tag.RowsAffected() != int64(len(rows)) {
		t.Fatalf("COPY tag %q", tag)
	}
	res, err := conn.Query(e.ctx, `SELECT s, b, r, r32, d, n::text, tz FROM vals`)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for res.Next() {
		var (
			s    *string
			b    []byte
			r    float32
			r32  float32
			d    float64
			n    string
			tz   time.Time
			want = rows[i]
		)
		if err := res.Scan(&s, &b, &r, &r32, &d, &n, &tz); err != nil {
			t.Fatal(err)
		}
		if (s == nil) != (want.S == nil) || s != nil && *s != *want.S {
			t.Errorf("row %d s = %q, want %q", i, deref(s), deref(want.S))
		}
		if (b == nil) != (want.B == nil) || !bytes.Equal(b, want.B) {
			t.Errorf("row %d b = %x, want %x", i, b, want.B)
		}
		if math.Float32bits(r) != math.Float32bits(float32(want.R)) {
			t.Errorf("row %d r = %v, want %v", i, r, float32(want.R))
		}
		if math.Float32bits(r32) != math.Float32bits(want.R32) {
			t.Errorf("row %d r32 = %v, want %v", i, r32, want.R32)
		}
		if math.Float64bits(d) != math.Float64bits(want.D) && !(math.IsNaN(d) && math.IsNaN(want.D)) {
			t.Errorf("row %d d = %v, want %v", i, d, want.D)
		}
		if wn := decimal2(want.N); n != wn {
			t.Errorf("row %d n = %s, want %s", i, n, wn)
		}
		if !tz.Equal(want.TZ) {
			t.Errorf("row %d tz = %v, want %v", i, tz, want.TZ)
		}
		i++
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(rows) {
		t.Fatalf("read %d rows, want %d", i, len(rows))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// decimal2 is an unscaled decimal(10,2) as PostgreSQL prints it.
func decimal2(x int64) string {
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	return sign + itoa(int(x/100)) + "." + string(rune('0'+x%100/10)) + string(rune('0'+x%10))
}

// TestCopyValuesPostgreSQLRefuses: values the emulator hands on and
// PostgreSQL refuses fail the COPY with PostgreSQL's own error, as when the
// emulator loaded with INSERTs: a DOUBLE too large or too small for REAL
// (the float8-to-float4 cast's errors) and a decimal too wide for its
// NUMERIC column. Nothing is loaded and the session goes on.
func TestCopyValuesPostgreSQLRefuses(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE narrow (r REAL, n NUMERIC(4,2))`)
	type row struct {
		R float64 `parquet:"r"`
		N int64   `parquet:"n,decimal(2:10)"`
	}
	for _, c := range []struct {
		name string
		rows []row
		want *pgconn.PgError
	}{
		{"overflow", []row{{R: 1}, {R: 1e300}}, &pgconn.PgError{Code: "22003", Message: "value out of range: overflow"}},
		{"underflow", []row{{R: 1}, {R: -1e-50}}, &pgconn.PgError{Code: "22003", Message: "value out of range: underflow"}},
		{"numeric", []row{{N: 9999}, {N: 10000}}, &pgconn.PgError{Code: "22003", Message: "numeric field overflow",
			Detail: "A field with precision 4, scale 2 must round to an absolute value less than 10^2."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.put(t, c.name+".parquet", writeParquet(t, c.rows))
			_, err := conn.Exec(e.ctx, e.copySQL("narrow", "r, n", c.name+".parquet"))
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != c.want.Code || pe.Message != c.want.Message || pe.Detail != c.want.Detail {
				t.Fatalf("COPY: %v (detail %q), want %s %q (detail %q)", err, detail(pe), c.want.Code, c.want.Message, c.want.Detail)
			}
			if n := count(t, e, conn, "narrow"); n != 0 {
				t.Fatalf("a failed COPY loaded %d rows", n)
			}
		})
	}
}

func detail(pe *pgconn.PgError) string {
	if pe == nil {
		return ""
	}
	return pe.Detail
}

// TestCopyLateBadRowLoadsNothing: a row far into a large file (after
// megabytes of rows were already handed to PostgreSQL) fails the
// emulator's check. The COPY fails with the same load error as any other,
// loads nothing, records the row in sys_load_error_detail, aborts the
// client's transaction, and leaves the connection usable; outside a block
// the same COPY leaves the session idle with nothing loaded.
func TestCopyLateBadRowLoadsNothing(t *testing.T) {
	const n, bad = 20000, 17321
	e := newEnv(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "late")
	rows := sinkRows("orders", 0, n)
	rows[bad-1].PicoOffset = strings.Repeat("9", 21) // VARCHAR(20)
	e.put(t, "late.parquet", writeParquet(t, rows))
	copySQL := e.copySQL("late", sinkCols, "late.parquet")
	wantDetail := "context:   " + e.url("late.parquet") + ", line 17321, column pico_offset (varchar 20)"

	tx, err := conn.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(e.ctx, copySQL)
	pe := pgErr(t, err, "XX000", "String length exceeds DDL length")
	if pe.Message != "String length exceeds DDL length" || !strings.Contains(pe.Detail, wantDetail) ||
		!strings.HasPrefix(pe.Detail, `Load into table "public"."late" failed.`) {
		t.Fatalf("error %q, detail:\n%s", pe.Message, pe.Detail)
	}
	_, err = tx.Exec(e.ctx, `SELECT 1`)
	pgErr(t, err, "25P02", "current transaction is aborted")
	if err := tx.Commit(e.ctx); err == nil || !strings.Contains(err.Error(), "rollback") {
		t.Fatalf("COMMIT of the aborted block: %v", err)
	}
	if got := count(t, e, conn, "late"); got != 0 {
		t.Fatalf("a failed COPY loaded %d rows", got)
	}

	_, err = conn.Exec(e.ctx, copySQL)
	pe2 := pgErr(t, err, "XX000", "String length exceeds DDL length")
	if pe2.Detail != pe.Detail {
		t.Fatalf("detail outside a block:\n%s\nwant:\n%s", pe2.Detail, pe.Detail)
	}
	if got := count(t, e, conn, "late"); got != 0 {
		t.Fatalf("a failed COPY loaded %d rows", got)
	}
	var lines []int
	res, err := conn.Query(e.ctx, `SELECT line_number FROM sys_load_error_detail ORDER BY start_time`)
	if err != nil {
		t.Fatal(err)
	}
	for res.Next() {
		var l int
		if err := res.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := res.Err(); err != nil || len(lines) != 2 || lines[0] != bad || lines[1] != bad {
		t.Fatalf("sys_load_error_detail lines %v (%v), want [%d %d]", lines, err, bad, bad)
	}

	// The session is in step with its backend: a good COPY loads it all.
	rows[bad-1].PicoOffset = "1"
	e.put(t, "good.parquet", writeParquet(t, rows))
	if tag := e.exec(t, conn, e.copySQL("late", sinkCols, "good.parquet")); tag.RowsAffected() != n {
		t.Fatalf("COPY tag %q", tag)
	}
	if got := count(t, e, conn, "late"); got != n {
		t.Fatalf("loaded %d rows, want %d", got, n)
	}
}
