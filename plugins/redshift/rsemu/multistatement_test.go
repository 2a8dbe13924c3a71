package rsemu_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// script sends sql as one simple-protocol query and returns the results of
// the statements that completed and the first error.
func script(t *testing.T, e *env, conn *pgx.Conn, sql string) ([]*pgconn.Result, error) {
	t.Helper()
	return conn.PgConn().Exec(e.ctx, sql).ReadAll()
}

func TestMultiStatementQueryIsOneTransaction(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE t (id INTEGER)`)

	// An error stops the query: the statements after it do not run, and
	// those before it are rolled back with it.
	res, err := script(t, e, conn, `INSERT INTO t VALUES (1); INSERT INTO t VALUES (1/0); INSERT INTO t VALUES (3)`)
	pgErr(t, err, "22012", "division by zero")
	if len(res) != 1 || res[0].CommandTag.String() != "INSERT 0 1" {
		t.Fatalf("results %v, want the first INSERT's only", tags(res))
	}
	if st := conn.PgConn().TxStatus(); st != 'I' {
		t.Errorf("transaction status %q after the failed query, want idle", st)
	}
	if n := count(t, e, conn, "t"); n != 0 {
		t.Errorf("%d rows: the implicit transaction was not rolled back", n)
	}

	// Without an error everything commits at the end.
	if _, err := script(t, e, conn, `INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	if st := conn.PgConn().TxStatus(); st != 'I' {
		t.Errorf("transaction status %q, want idle", st)
	}
	if n := count(t, e, conn, "t"); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
}

func TestMultiStatementQueryWithExplicitTransaction(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE t (id INTEGER)`)

	res, err := script(t, e, conn, `BEGIN; LOCK t; INSERT INTO t VALUES (1); COMMIT`)
	if err != nil {
		t.Fatal(err)
	}
	if got := tags(res); got != "BEGIN|LOCK TABLE|INSERT 0 1|COMMIT" {
		t.Errorf("results %s", got)
	}
	if n := count(t, e, conn, "t"); n != 1 {
		t.Errorf("%d rows, want 1", n)
	}

	// An error inside the explicit block leaves it aborted, COMMIT
	// skipped: the session needs a ROLLBACK.
	res, err = script(t, e, conn, `BEGIN; INSERT INTO t VALUES (2); INSERT INTO t VALUES (1/0); COMMIT`)
	pgErr(t, err, "22012", "division by zero")
	if got := tags(res); got != "BEGIN|INSERT 0 1" {
		t.Errorf("results %s", got)
	}
	if st := conn.PgConn().TxStatus(); st != 'E' {
		t.Fatalf("transaction status %q, want E (failed transaction block)", st)
	}
	_, err = conn.Exec(e.ctx, `SELECT 1`)
	pgErr(t, err, "25P02", "current transaction is aborted")
	e.exec(t, conn, `ROLLBACK`)
	if n := count(t, e, conn, "t"); n != 1 {
		t.Errorf("%d rows after the rollback, want 1", n)
	}

	// BEGIN after a statement makes the implicit block explicit: the
	// earlier statement is part of it and nothing commits at the end.
	if _, err := script(t, e, conn, `INSERT INTO t VALUES (3); BEGIN; INSERT INTO t VALUES (4)`); err != nil {
		t.Fatal(err)
	}
	if st := conn.PgConn().TxStatus(); st != 'T' {
		t.Fatalf("transaction status %q, want T (open block)", st)
	}
	e.exec(t, conn, `ROLLBACK`)
	if n := count(t, e, conn, "t"); n != 1 {
		t.Errorf("%d rows, want 1: both INSERTs belonged to the rolled-back block", n)
	}

	// COMMIT in the middle ends the block; what follows runs in a new one.
	_, err = script(t, e, conn, `INSERT INTO t VALUES (5); COMMIT; INSERT INTO t VALUES (6); INSERT INTO t VALUES (1/0)`)
	pgErr(t, err, "22012", "division by zero")
	if n := count(t, e, conn, "t"); n != 2 {
		t.Errorf("%d rows, want 2: the INSERT before COMMIT only", n)
	}
}

func TestMultiStatementQueryTruncateStillCommits(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	e.exec(t, conn, `CREATE TABLE target (id INTEGER)`)
	e.exec(t, conn, `CREATE TABLE staging (id INTEGER)`)
	e.exec(t, conn, `INSERT INTO staging VALUES (1)`)

	// TRUNCATE commits the INSERT before it, in the implicit block as in
	// an explicit one; the failing INSERT after it is rolled back alone.
	res, err := script(t, e, conn, `INSERT INTO target SELECT id FROM staging; TRUNCATE staging; INSERT INTO target VALUES (2); INSERT INTO target VALUES (1/0)`)
	pgErr(t, err, "22012", "division by zero")
	if len(res) != 3 {
		t.Errorf("results %s, want three", tags(res))
	}
	if st := conn.PgConn().TxStatus(); st != 'I' {
		t.Errorf("transaction status %q, want idle", st)
	}
	if n := count(t, e, conn, "target"); n != 1 {
		t.Errorf("target holds %d rows, want 1: TRUNCATE committed the first INSERT, the error undid the second", n)
	}
	if n := count(t, e, conn, "staging"); n != 0 {
		t.Errorf("staging holds %d rows: TRUNCATE was undone", n)
	}

	// Inside an explicit block too: TRUNCATE ends it.
	e.exec(t, conn, `INSERT INTO staging VALUES (1)`)
	_, err = script(t, e, conn, `BEGIN; INSERT INTO target VALUES (3); TRUNCATE staging; INSERT INTO target VALUES (1/0); COMMIT`)
	pgErr(t, err, "22012", "division by zero")
	if st := conn.PgConn().TxStatus(); st != 'I' {
		t.Errorf("transaction status %q, want idle", st)
	}
	if n := count(t, e, conn, "target"); n != 2 {
		t.Errorf("target holds %d rows, want 2", n)
	}
}

func TestRoundTrips(t *testing.T) {
	e := newEnv(t)
	e.needEmulator(t)
	conn := e.connect(t)
	e.emu.ResetStatements()
	e.exec(t, conn, `CREATE TABLE t (id INTEGER); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)`) // one query
	e.exec(t, conn, `INSERT INTO t VALUES ($1)`, pgx.QueryExecModeExec, 3)                             // Parse … Sync
	_, _ = script(t, e, conn, `INSERT INTO t VALUES (1/0); INSERT INTO t VALUES (4)`)                  // one query, stopped
	if n := e.emu.RoundTrips(); n != 3 {
		t.Errorf("%d round trips, want 3", n)
	}
	if n := len(e.emu.Statements()); n != 5 {
		t.Errorf("%d statements logged, want 5: %q", n, e.emu.Statements())
	}
}

// tags joins the command tags of results with "|".
func tags(res []*pgconn.Result) string {
	s := ""
	for i, r := range res {
		if i > 0 {
			s += "|"
		}
		s += r.CommandTag.String()
	}
	return s
}
