package rsemu_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

func TestTruncateCommitsTheOpenTransaction(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE target (id VARCHAR(10))`)
	e.exec(t, conn, `CREATE TABLE staging (id VARCHAR(10))`)
	e.exec(t, conn, `INSERT INTO staging VALUES ('s')`)

	tx, err := conn.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, `INSERT INTO target SELECT id FROM staging`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, `TRUNCATE staging`); err != nil {
		t.Fatal(err)
	}
	if st := conn.PgConn().TxStatus(); st != 'I' {
		t.Errorf("after TRUNCATE the session is in transaction status %q, want idle", st)
	}
	// Rolling back now undoes nothing: TRUNCATE committed the INSERT and itself.
	_ = tx.Rollback(e.ctx)
	if n := count(t, e, conn, "target"); n != 1 {
		t.Errorf("target rows after rollback: %d, want 1 (TRUNCATE committed the INSERT)", n)
	}
	if n := count(t, e, conn, "staging"); n != 0 {
		t.Errorf("staging rows after rollback: %d, want 0 (TRUNCATE cannot be rolled back)", n)
	}

	// The same over the extended protocol (Query always uses it).
	e.exec(t, conn, `INSERT INTO staging VALUES ('s2')`)
	e.exec(t, conn, `BEGIN`)
	e.exec(t, conn, `INSERT INTO target VALUES ('t2')`)
	rows, err := conn.Query(e.ctx, `TRUNCATE TABLE staging`)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	e.exec(t, conn, `ROLLBACK`)
	if n := count(t, e, conn, "target"); n != 2 {
		t.Errorf("target rows: %d, want 2", n)
	}
}

func TestLockPassesThrough(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE t (id INTEGER)`)
	tx, err := conn.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, `LOCK t`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(e.ctx, `LOCK TABLE t IN SHARE MODE`)
	pgErr(t, err, "0A000", "LOCK with a lock mode")
}

func TestUnsupportedSyntaxFailsLoudly(t *testing.T) {
	e := newEnv(t)
	e.needEmulator(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE t (id INTEGER, v VARCHAR(10))`)
	for _, sql := range []string{
		`UNLOAD ('select 1') TO 's3://b/p' IAM_ROLE 'arn:aws:iam::123456789012:role/RedshiftCopy'`,
		`CREATE EXTERNAL TABLE spectrum.t (id int) STORED AS PARQUET LOCATION 's3://b/p'`,
		`CREATE EXTERNAL SCHEMA spectrum FROM DATA CATALOG DATABASE 'd' IAM_ROLE 'x'`,
		`SELECT GETDATE()`,
		`SELECT SYSDATE`,
		`SELECT NVL(v, 'x') FROM t`,
		`SELECT LISTAGG(v, ',') FROM t`,
		`SELECT * FROM stl_query`,
		`SELECT * FROM svv_table_info`,
		`SELECT pg_last_copy_count()`,
		`INSERT INTO t VALUES (1, 'a') ON CONFLICT DO NOTHING`,
		`INSERT INTO t VALUES (1, 'a') RETURNING id`,
		`SAVEPOINT s`,
		`CREATE TABLE i (id INTEGER) INTERLEAVED SORTKEY (id)`,
		`CREATE TABLE i (id BIGINT IDENTITY(1,1))`,
		`CREATE TABLE i (g GEOMETRY)`,
		`CREATE TABLE i (id INTEGER CHECK (id > 0))`,
		`CREATE TABLE i AS SELECT 1 AS id`,
		`CREATE TABLE i (LIKE t)`,
		`COPY t FROM STDIN`,
		`COPY t TO STDOUT`,
		`COPY t FROM 's3://b/p' IAM_ROLE 'arn:aws:iam::123456789012:role/RedshiftCopy' FORMAT AS CSV`,
		`COPY t FROM 's3://b/p' IAM_ROLE 'arn:aws:iam::123456789012:role/RedshiftCopy' FORMAT AS PARQUET FILLRECORD`,
		`ALTER TABLE t ADD COLUMN w VARCHAR(5)`,
		`ALTER TABLE t APPEND FROM u`,
		`VACUUM DELETE ONLY t`,
		`ANALYZE COMPRESSION t`,
		`SHOW TABLES FROM SCHEMA dev.public`,
		`LISTEN x`,
		`TRUNCATE t, u`,
	} {
		t.Run(sql, func(t *testing.T) {
			_, err := conn.Exec(e.ctx, sql)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Message, "not supported by the Redshift emulator") {
				t.Fatalf("want the emulator's 0A000 refusal, got %v", err)
			}
			// The same through the extended protocol.
			rows, err := conn.Query(e.ctx, sql)
			if err == nil {
				rows.Close()
				err = rows.Err()
			}
			if !errors.As(err, &pe) || pe.Code != "0A000" {
				t.Fatalf("extended protocol: want 0A000, got %v", err)
			}
		})
	}
	// Plain SQL passes through.
	for _, sql := range []string{
		`SELECT 1`, `SET search_path TO public`, `SHOW search_path`, `BEGIN`, `DELETE FROM t WHERE id = 1`,
		`INSERT INTO t SELECT 1, 'x'`, `COMMIT`, `DROP TABLE IF EXISTS nope`,
		`SELECT CAST('x' AS VARCHAR(MAX))`, `VACUUM t`, `ANALYZE t`,
	} {
		e.exec(t, conn, sql)
	}
}

func TestExtendedProtocolThroughTheProxy(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE kv (k VARCHAR(20) NOT NULL, v VARBYTE(100), n BIGINT)`)
	for i := 0; i < 10; i++ {
		if _, err := conn.Exec(e.ctx, `INSERT INTO kv (k, v, n) VALUES ($1, $2, $3)`, "key"+itoa(i), []byte{byte(i), 0, 255}, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	var v []byte
	var n int64
	if err := conn.QueryRow(e.ctx, `SELECT v, n FROM kv WHERE k = $1`, "key7").Scan(&v, &n); err != nil {
		t.Fatal(err)
	}
	if n != 7 || len(v) != 3 || v[0] != 7 || v[2] != 255 {
		t.Fatalf("got %v %d", v, n)
	}
	// A batch mixes statements the proxy forwards with ones it emulates.
	e.exec(t, conn, `CREATE TABLE batch_made (id VARCHAR(5))`)
	e.exec(t, conn, `INSERT INTO batch_made VALUES ('old'), ('older')`)
	b := &pgx.Batch{}
	b.Queue(`TRUNCATE batch_made`)
	b.Queue(`INSERT INTO batch_made VALUES ($1)`, "a")
	b.Queue(`SELECT count(*) FROM batch_made`)
	br := conn.SendBatch(e.ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	var c int
	if err := br.QueryRow().Scan(&c); err != nil || c != 1 {
		t.Fatalf("batch count %d %v", c, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	// Every exec mode of pgx works.
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		var got string
		if err := conn.QueryRow(e.ctx, `SELECT k FROM kv WHERE n = $1`, mode, int64(3)).Scan(&got); err != nil || got != "key3" {
			t.Fatalf("mode %v: %q %v", mode, got, err)
		}
	}
	// An error in one batch leaves the connection usable.
	_, err := conn.Exec(e.ctx, `INSERT INTO kv (k) VALUES ($1)`, strings.Repeat("x", 21))
	pgErr(t, err, "22001", "character varying(20)")
	if got := count(t, e, conn, "kv"); got != 10 {
		t.Fatalf("rows: %d", got)
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	e.needEmulator(t)
	cfg, err := pgx.ParseConfig(e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = "wrong"
	_, err = pgx.ConnectConfig(e.ctx, cfg)
	pgErr(t, err, "28P01", "password authentication failed")

	// sslmode=prefer: the emulator declines TLS and the client goes on in plain text.
	dsn := strings.Replace(e.dsn, "sslmode=disable", "sslmode=prefer", 1)
	conn, err := pgx.Connect(e.ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(e.ctx)
}

func TestCancelReachesTheBackend(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := conn.Exec(ctx, `SELECT pg_sleep(20)`)
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("cancel did not interrupt pg_sleep: %v after %s", err, time.Since(start))
	}
}

// ------------------------------------------------------------------ faults

func TestFaultFailNextWithSerializableViolation(t *testing.T) {
	e := newEnv(t)
	e.needEmulator(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	e.put(t, "a.parquet", writeParquet(t, sinkRows("t", 0, 2)))

	h := e.emu.FailNext(`(?i)^COPY\b`, 2, rsemu.SerializableViolation(100167))
	for i := 0; i < 2; i++ {
		_, err := conn.Exec(e.ctx, e.copySQL("stage", sinkCols, "a.parquet"))
		pe := pgErr(t, err, "XX000", "1023")
		if !strings.Contains(pe.Detail, "Serializable isolation violation on table - 100167") {
			t.Fatalf("detail: %q", pe.Detail)
		}
	}
	e.exec(t, conn, e.copySQL("stage", sinkCols, "a.parquet"))
	if h.Hits() != 2 {
		t.Fatalf("hits %d", h.Hits())
	}
	if n := count(t, e, conn, "stage"); n != 2 {
		t.Fatalf("rows %d", n)
	}

	// Inside a transaction the injected error aborts it, as a real one would.
	e.emu.FailNext(`(?i)^insert`, 1, &rsemu.Error{Code: "40001", Message: "could not serialize access"})
	tx, err := conn.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(e.ctx, `INSERT INTO stage (id) VALUES ($1)`, "x")
	pgErr(t, err, "40001", "could not serialize access")
	_, err = tx.Exec(e.ctx, `SELECT 1`)
	pgErr(t, err, "25P02", "current transaction is aborted")
	_ = tx.Rollback(e.ctx)
	e.exec(t, conn, `SELECT 1`)
}

func TestFaultAdminShutdownClosesTheConnection(t *testing.T) {
	e := newEnv(t)
	e.needEmulator(t)
	conn := e.connect(t)
	e.emu.FailNext(`(?i)^truncate`, 1, rsemu.AdminShutdown())
	e.exec(t, conn, `CREATE TABLE t (id INTEGER)`)
	_, err := conn.Exec(e.ctx, `TRUNCATE t`)
	pgErr(t, err, "57P01", "terminating connection due to administrator command")
	if !conn.IsClosed() {
		t.Fatal("connection still open after FATAL 57P01")
	}
	conn2 := e.connect(t)
	e.exec(t, conn2, `TRUNCATE t`)
}

func TestFaultDropBeforeAndAfterCopy(t *testing.T) {
	e := newEnv(t)
	e.needEmulator(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	e.put(t, "a.parquet", writeParquet(t, sinkRows("t", 0, 3)))

	// Dropped on arrival: nothing loaded, and the client sees a broken connection.
	e.emu.DropOn(`(?i)^copy`, 1)
	if _, err := conn.Exec(e.ctx, e.copySQL("stage", sinkCols, "a.parquet")); err == nil {
		t.Fatal("COPY succeeded on a dropped connection")
	}
	check := e.connect(t)
	if n := count(t, e, check, "stage"); n != 0 {
		t.Fatalf("dropped-before COPY loaded %d rows", n)
	}

	// Dropped after running outside a transaction: loaded, but the client
	// cannot know.
	conn = e.connect(t)
	e.emu.DropAfter(`(?i)^copy`, 1)
	if _, err := conn.Exec(e.ctx, e.copySQL("stage", sinkCols, "a.parquet")); err == nil {
		t.Fatal("client saw success on a dropped connection")
	}
	if n := count(t, e, check, "stage"); n != 3 {
		t.Fatalf("dropped-after COPY: %d rows, want 3", n)
	}

	// Dropped after running inside a transaction: rolled back with the connection.
	conn = e.connect(t)
	e.emu.DropAfter(`(?i)^copy`, 1)
	tx, err := conn.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, e.copySQL("stage", sinkCols, "a.parquet")); err == nil {
		t.Fatal("client saw success on a dropped connection")
	}
	deadline := time.Now().Add(5 * time.Second)
	for count(t, e, check, "stage") != 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := count(t, e, check, "stage"); n != 3 {
		t.Fatalf("in-transaction dropped-after COPY: %d rows, want 3", n)
	}
}

// A fault with Skip lets that many matching statements through first;
// they are not hits.
func TestFaultSkip(t *testing.T) {
	e := newEnv(t)
	e.needEmulator(t)
	conn := e.connect(t)
	h := e.emu.AddFault(rsemu.Fault{Match: regexp.MustCompile(`^SELECT 7`), Skip: 2,
		Err: &rsemu.Error{Code: "XX000", Message: "third time"}})
	e.exec(t, conn, `SELECT 7`)
	e.exec(t, conn, `SELECT 8`) // no match: not skipped
	e.exec(t, conn, `SELECT 7`)
	if h.Hits() != 0 {
		t.Fatalf("hits %d while skipping", h.Hits())
	}
	_, err := conn.Exec(e.ctx, `SELECT 7`)
	pgErr(t, err, "XX000", "third time")
	e.exec(t, conn, `SELECT 7`)
	if h.Hits() != 1 {
		t.Fatalf("hits %d", h.Hits())
	}
}

func TestFaultDelay(t *testing.T) {
	e := newEnv(t)
	e.needEmulator(t)
	conn := e.connect(t)
	h := e.emu.DelayOn(`^SELECT 42`, time.Second, 1)
	start := time.Now()
	e.exec(t, conn, `SELECT 42`)
	if d := time.Since(start); d < time.Second {
		t.Fatalf("delayed statement took %s", d)
	}
	start = time.Now()
	e.exec(t, conn, `SELECT 42`)
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Fatalf("second statement still delayed: %s", d)
	}
	if h.Hits() != 1 {
		t.Fatalf("hits %d", h.Hits())
	}
	// A delay composes with a failure on the same statement.
	e.emu.DelayOn(`^SELECT 43`, 100*time.Millisecond, 1)
	e.emu.FailNext(`^SELECT 43`, 1, &rsemu.Error{Code: "57014", Message: "canceling statement due to statement timeout"})
	start = time.Now()
	_, err := conn.Exec(e.ctx, `SELECT 43`)
	pgErr(t, err, "57014", "statement timeout")
	if time.Since(start) < 100*time.Millisecond {
		t.Fatal("delay did not apply before the failure")
	}
}

func TestStatementLog(t *testing.T) {
	e := newEnv(t)
	e.needEmulator(t)
	conn := e.connect(t)
	e.emu.ResetStatements()
	e.exec(t, conn, `CREATE TABLE t (id INTEGER); INSERT INTO t VALUES (1)`)
	for i := 0; i < 3; i++ {
		if _, err := conn.Exec(e.ctx, `INSERT INTO t VALUES ($1)`, i); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{`CREATE TABLE t (id INTEGER)`, `INSERT INTO t VALUES (1)`,
		`INSERT INTO t VALUES ($1)`, `INSERT INTO t VALUES ($1)`, `INSERT INTO t VALUES ($1)`}
	got := e.emu.Statements()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("statement log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := e.emu.CountStatements(`(?i)^insert`); n != 4 {
		t.Fatalf("CountStatements: %d", n)
	}
	if log := e.emu.StatementLog(); log[0].Session != log[4].Session {
		t.Fatalf("sessions: %+v", log)
	}
}

func TestServicesRequireReadsEnvFile(t *testing.T) {
	// The emulator tests depend on services.Require finding the services,
	// from the environment or from .services.env.
	s := services.Require(t)
	if s.PGDSN == "" || s.S3Endpoint == "" {
		t.Fatalf("%+v", s)
	}
}

func TestConcurrentConnectionsToAFreshDatabase(t *testing.T) {
	e := newEnv(t)
	// A sink opens a pool at once; every connection bootstraps the shadow
	// catalog of the new database, and none may fail doing so.
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func(i int) {
			conn, err := pgx.Connect(e.ctx, e.dsn)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(e.ctx)
			_, err = conn.Exec(e.ctx, `CREATE TABLE IF NOT EXISTS shared (id VARCHAR(10))`)
			if err == nil {
				_, err = conn.Exec(e.ctx, `SELECT count(*) FROM pg_table_def WHERE tablename = $1`, "shared")
			}
			errs <- err
		}(i)
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	conn := e.connect(t)
	var typ string
	if err := conn.QueryRow(e.ctx, `SELECT type FROM pg_table_def WHERE tablename = 'shared'`).Scan(&typ); err != nil || typ != "character varying(10)" {
		t.Fatalf("type %q %v", typ, err)
	}
}

// Redshift has no lock_timeout: statement_timeout is what bounds a LOCK
// waiting for another transaction's lock. The canceled statement fails with
// 57014 in Redshift's words and aborts its transaction; the holder is
// unaffected.
func TestStatementTimeoutCancelsALockWait(t *testing.T) {
	e := newEnv(t)
	holder, waiter := e.connect(t), e.connect(t)
	e.exec(t, holder, `CREATE TABLE lockwait (id VARCHAR(16))`)
	e.exec(t, holder, `BEGIN`)
	e.exec(t, holder, `LOCK lockwait`)
	e.exec(t, holder, `INSERT INTO lockwait VALUES ('held')`)

	e.exec(t, waiter, `SET statement_timeout TO 300`)
	e.exec(t, waiter, `BEGIN`)
	start := time.Now()
	_, err := waiter.Exec(e.ctx, `LOCK lockwait`)
	waited := time.Since(start)
	pgErr(t, err, "57014", "cancelled on user's request")
	if waited < 300*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("LOCK gave up after %s, want about 300ms", waited)
	}
	_, err = waiter.Exec(e.ctx, `SELECT 1`)
	pgErr(t, err, "25P02", "current transaction is aborted")
	e.exec(t, waiter, `ROLLBACK`)

	e.exec(t, holder, `COMMIT`)
	e.exec(t, waiter, `BEGIN`)
	e.exec(t, waiter, `LOCK lockwait`)
	e.exec(t, waiter, `COMMIT`)
	if n := count(t, e, waiter, "lockwait"); n != 1 {
		t.Fatalf("%d rows, want the holder's one", n)
	}
}

// A delay fault is time queued on the cluster, which Redshift counts against
// statement_timeout: a shorter timeout cancels the statement when it runs
// out, inside a transaction aborting it.
func TestFaultDelayCountsAgainstStatementTimeout(t *testing.T) {
	e := newEnv(t)
	e.needEmulator(t)
	conn := e.connect(t)
	e.exec(t, conn, `SET statement_timeout = '200ms'`)
	e.emu.DelayOn(`^SELECT 42`, 3*time.Second, 1)
	e.exec(t, conn, `BEGIN`)
	start := time.Now()
	_, err := conn.Exec(e.ctx, `SELECT 42`)
	waited := time.Since(start)
	pgErr(t, err, "57014", "cancelled on user's request")
	if waited < 200*time.Millisecond || waited > 2*time.Second {
		t.Fatalf("canceled after %s, want about 200ms", waited)
	}
	_, err = conn.Exec(e.ctx, `SELECT 1`)
	pgErr(t, err, "25P02", "current transaction is aborted")
	e.exec(t, conn, `ROLLBACK`)

	// A delay shorter than the timeout only delays.
	e.exec(t, conn, `SET statement_timeout TO 2000`)
	e.emu.DelayOn(`^SELECT 43`, 300*time.Millisecond, 1)
	start = time.Now()
	e.exec(t, conn, `SELECT 43`)
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("delay of 300ms took %s", d)
	}
}
