package redshift

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/retry"
)

// defaultConnectTimeout bounds establishing one connection when the
// connection string sets no connect_timeout.
const defaultConnectTimeout = 30 * time.Second

// rollbackTimeout bounds the ROLLBACK after a failed attempt; the batch's
// own context may already be done.
const rollbackTimeout = 10 * time.Second

// db is the sink's connection pool and the statements it runs.
type db struct {
	pool    *pgxpool.Pool
	policy  retry.Policy
	timeout time.Duration // statement_timeout set on every connection; 0 for none
	log     *slog.Logger
}

// poolConfig parses the connection string. The password it finds is
// returned so the caller can register it for redaction before anything can
// print it.
//
// A timeout above 0 becomes Redshift's statement_timeout on every new
// connection. Redshift has no lock_timeout, and the load transaction's
// LOCK on the staging table waits for as long as another writer holds it:
// statement_timeout is what bounds that wait (and any statement stuck in a
// WLM queue) so a stalled peer costs a RETRY, not a hang.
func poolConfig(connString string, maxConns int, timeout time.Duration) (*pgxpool.Config, string, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, "", err
	}
	cfg.MaxConns = int32(maxConns)
	cfg.MinConns = 0
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	// Unnamed statements only: every COPY text is different, so cached
	// prepared statements would only pile up on the server. Statements
	// without arguments go through the simple protocol in any mode.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	if timeout > 0 {
		set := fmt.Sprintf("SET statement_timeout TO %d", timeout.Milliseconds())
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, set)
			return err
		}
	}
	return cfg, cfg.ConnConfig.Password, nil
}

// table is a resolved target whose tables exist and match the layout.
type table struct {
	name    string
	staging string
	limits  rsql.Limits // byte limits of the columns, narrowed to what both tables hold
	lock    string
	dups    string
	insert  string
	cleanup string
	upsert  *rsql.Upsert // write_mode = upsert: the statements after COPY
	queue   loadQueue    // batches waiting to be loaded together (group.go)
}

// errTableCheck marks a table that was not found or does not match, so the
// caller can classify it as a configuration problem.
type tableError struct{ err error }

func (e *tableError) Error() string { return e.err.Error() }
func (e *tableError) Unwrap() error { return e.err }

// ensureTable creates staging_<name> and <name> if they do not exist and
// checks both against the layout in pg_table_def. Both steps go through
// the retry policy like every other statement.
func (d *db) ensureTable(ctx context.Context, name string, l *rsql.Layout) (*table, error) {
	staging := rsql.Staging(name)
	upsert := len(l.Keys()) > 0
	// The two tables differ only with a SUPER payload, staged as VARBYTE.
	tables := []struct {
		name   string
		layout *rsql.Layout
	}{{staging, l.Staging()}, {name, l}}
	err := retry.Do(ctx, d.policy, func(ctx context.Context) error {
		for _, t := range tables {
			if _, err := d.pool.Exec(ctx, rsql.CreateTable(t.name, t.layout)); err != nil {
				return fmt.Errorf("CREATE TABLE %s: %w", rsql.Ident(t.name), err)
			}
		}
		if upsert {
			if _, err := d.pool.Exec(ctx, rsql.CreateOffsets(rsql.Offsets(name))); err != nil {
				return fmt.Errorf("CREATE TABLE %s: %w", rsql.Ident(rsql.Offsets(name)), err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("Redshift table creation failed %s", describeRetry(err))
	}
	var limits rsql.Limits
	for _, t := range []struct {
		name   string
		layout *rsql.Layout
	}{tables[1], tables[0]} {
		var rows []rsql.TableDefRow
		err := retry.Do(ctx, d.policy, func(ctx context.Context) error {
			var err error
			rows, err = d.tableDef(ctx, t.name)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading pg_table_def for %s failed %s", rsql.Ident(t.name), describeRetry(err))
		}
		lim, err := rsql.Check(t.name, t.layout, rows)
		if err != nil {
			return nil, &tableError{err}
		}
		if limits == nil {
			limits = lim
		} else {
			limits = rsql.Narrow(limits, lim)
		}
	}
	t := &table{
		name:    name,
		staging: staging,
		limits:  limits,
		lock:    rsql.Lock(staging),
		dups:    rsql.StagedDuplicates(name, staging),
		insert:  rsql.Insert(name, staging, l),
		cleanup: rsql.DeleteAll(staging),
	}
	if upsert {
		offsets := rsql.Offsets(name)
		var rows []rsql.TableDefRow
		err := retry.Do(ctx, d.policy, func(ctx context.Context) error {
			var err error
			rows, err = d.tableDef(ctx, offsets)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading pg_table_def for %s failed %s", rsql.Ident(offsets), describeRetry(err))
		}
		if err := rsql.CheckOffsets(offsets, rows); err != nil {
			return nil, &tableError{err}
		}
		u := rsql.NewUpsert(name, staging, offsets, l)
		t.upsert = &u
	}
	return t, nil
}

// tableDef reads the table's pg_table_def rows. Redshift folds quoted
// identifiers to lower case unless enable_case_sensitive_identifier is on,
// so a name with capitals that is not found as written is looked up again
// in lower case.
func (d *db) tableDef(ctx context.Context, name string) ([]rsql.TableDefRow, error) {
	rows, err := d.queryTableDef(ctx, name)
	if err != nil || len(rows) > 0 {
		return rows, err
	}
	if lower := strings.ToLower(name); lower != name {
		return d.queryTableDef(ctx, lower)
	}
	return nil, nil
}

func (d *db) queryTableDef(ctx context.Context, name string) ([]rsql.TableDefRow, error) {
	rows, err := d.pool.Query(ctx, rsql.TableDefQuery, name)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (rsql.TableDefRow, error) {
		var row rsql.TableDefRow
		err := r.Scan(&row.Column, &row.Type)
		return row, err
	})
}

// loadResult is what one committed load did.
type loadResult struct {
	inserted int64    // rows the INSERT added to the target
	attempts int      // transactions started, the committed one included
	dups     []string // with plan.dups: ids of staged rows the target already had (upsert: changes already applied)
	upsert   bool     // the load applied changes (write_mode = upsert)
	applied  int64    // upsert: staged changes already applied before (a replay), left out
	deleted  int64    // upsert: target rows the DELETE of changed keys removed
}

// skipped is how many of copied staged rows the load left out as already
// written: in append mode the ids the target had, in upsert mode the
// changes at or below their topic-partition's applied offset.
func (r loadResult) skipped(copied int64) int64 {
	if r.upsert {
		return r.applied
	}
	return max(copied-r.inserted, 0)
}

// loadSteps name the statements of the load transaction of one file, in
// the order loadOnce sends them; errors say which one failed by these names.
var loadSteps = []string{"BEGIN", "LOCK", "COPY", "INSERT", "staging cleanup", "COMMIT"}

// groupSteps are those of a load of several batches: the COPY reads a
// manifest, and a SELECT before the INSERT says which staged ids the target
// already has, so each batch learns its own skipped count.
var groupSteps = []string{"BEGIN", "LOCK", "COPY", "duplicates SELECT", "INSERT", "staging cleanup", "COMMIT"}

// upsertSteps are those of a load with write_mode = upsert: after COPY,
// the changes already applied leave staging, the changed keys' rows leave
// the target, each key's last upsert goes in, and the applied offsets move.
var upsertSteps = []string{"BEGIN", "LOCK", "COPY", "DELETE of applied changes", "DELETE of changed keys", "INSERT",
	"DELETE of old offsets", "INSERT of offsets", "staging cleanup", "COMMIT"}

// upsertGroupSteps add the SELECT of the changes already applied, so each
// batch of a group learns its own skipped count.
var upsertGroupSteps = []string{"BEGIN", "LOCK", "COPY", "applied SELECT", "DELETE of applied changes", "DELETE of changed keys", "INSERT",
	"DELETE of old offsets", "INSERT of offsets", "staging cleanup", "COMMIT"}

// loadPlan is one load transaction: its statements, their names, and the
// indexes of those whose answers loadOnce reads.
type loadPlan struct {
	steps   []string // names, as in loadSteps
	sql     string   // the statements as one query
	insert  int
	dups    int // -1: no duplicates SELECT
	commit  int
	upsert  bool
	applied int // upsert: the DELETE of changes already applied; else -1
	deleted int // upsert: the DELETE of the changed keys' rows; else -1
}

// filePlan loads one COPY source (a file, or a manifest without the
// duplicates SELECT) into t.
func (t *table) filePlan(copySQL string) loadPlan {
	if u := t.upsert; u != nil {
		return loadPlan{steps: upsertSteps, sql: rsql.Script("BEGIN", t.lock, copySQL, u.SkipApplied, u.DeleteKeys, u.Insert,
			u.ForgetOffsets, u.RecordOffsets, t.cleanup, "COMMIT"),
			insert: 5, dups: -1, commit: 9, upsert: true, applied: 3, deleted: 4}
	}
	return loadPlan{steps: loadSteps, sql: rsql.Script("BEGIN", t.lock, copySQL, t.insert, t.cleanup, "COMMIT"),
		insert: 3, dups: -1, commit: 5, applied: -1, deleted: -1}
}

// groupPlan loads the files of a manifest into t, reading the staged ids
// the target already has (upsert: the changes already applied) before the
// INSERT.
func (t *table) groupPlan(copySQL string) loadPlan {
	if u := t.upsert; u != nil {
		return loadPlan{steps: upsertGroupSteps, sql: rsql.Script("BEGIN", t.lock, copySQL, u.Applied, u.SkipApplied, u.DeleteKeys, u.Insert,
			u.ForgetOffsets, u.RecordOffsets, t.cleanup, "COMMIT"),
			insert: 6, dups: 3, commit: 10, upsert: true, applied: 4, deleted: 5}
	}
	return loadPlan{steps: groupSteps, sql: rsql.Script("BEGIN", t.lock, copySQL, t.dups, t.insert, t.cleanup, "COMMIT"),
		insert: 4, dups: 3, commit: 6, applied: -1, deleted: -1}
}

// InDoubtError is a load one of whose attempts sent the transaction and
// got no answer to it (the connection broke, or the consume was cancelled
// while waiting): Redshift may have committed it, or may still. A load
// error of any other type means nothing of the chunk committed: the server
// refused a statement (which aborts the transaction), or nothing was sent.
type InDoubtError struct {
	msg string
	err error // a *retry.Error
}

func (e *InDoubtError) Error() string { return e.msg }
func (e *InDoubtError) Unwrap() error { return e.err }

// loadError is a load that did not commit. It keeps the load's error in
// the chain, so that a cancellation is still seen as one.
type loadError struct {
	msg string
	err error
}

func (e *loadError) Error() string { return e.msg }
func (e *loadError) Unwrap() error { return e.err }

// load runs the load transaction for one uploaded file:
//
//	BEGIN;
//	LOCK "staging_<t>";
//	COPY "staging_<t>" (...) FROM 's3://...' CREDENTIALS 'aws_iam_role=...' FORMAT AS PARQUET STATUPDATE OFF;
//	INSERT INTO "<t>" (...) SELECT ... one row per id, ids not in <t> ...;
//	DELETE FROM "staging_<t>";
//	COMMIT
//
// The lock makes writers of one target take turns, so no writer can clear
// rows another staged but has not inserted yet; the DELETE (not TRUNCATE,
// which commits in Redshift) keeps cleanup inside the transaction. An error
// the server answers aborts the transaction; a replay loads again and the
// INSERT skips ids already present. The six statements are one query,
// though: once it is sent, the server runs it to the end whether or not the
// client is still there to read the answers, so a load whose answers were
// lost may have committed (an *InDoubtError).
//
// The whole transaction is the unit of retry: after a transient failure
// (serialization conflict, dropped connection, ...) the transaction is
// rolled back and started again from BEGIN.
func (d *db) load(ctx context.Context, t *table, plan loadPlan) (loadResult, error) {
	var res loadResult
	var a, doubt attempt
	p := d.policy
	p.OnRetry = func(attempt int, err error, wait time.Duration) {
		d.log.Warn("Redshift load transaction failed, retrying", "table", t.name, "step", a.step,
			"attempt", attempt, "wait", wait, "error", describeErr(err))
	}
	err := retry.Do(ctx, p, func(ctx context.Context) error {
		res.attempts++
		var err error
		a, err = d.loadOnce(ctx, plan)
		if a.inDoubt {
			// An earlier attempt that may have committed still may have
			// after a later one was refused.
			doubt = a
		}
		return err
	})
	if err == nil {
		res.inserted, res.dups = a.inserted, a.dups
		res.upsert, res.applied, res.deleted = plan.upsert, a.applied, a.deleted
		return res, nil
	}
	var msg string
	switch {
	case a.inDoubt:
		msg = fmt.Sprintf("its load transaction into %s was sent and %s (%s)", rsql.Ident(t.name), a.stopped(), describeRetry(err))
	case d.timeout > 0 && ctx.Err() == nil && retry.SQLState(err) == sqlStateQueryCanceled:
		msg = d.timedOut(a.step, t, err)
	default:
		msg = fmt.Sprintf("Redshift %s failed %s", a.step, describeRetry(err))
	}
	if !doubt.inDoubt {
		return res, &loadError{msg: msg, err: err}
	}
	if !a.inDoubt {
		msg += "; an earlier attempt's load transaction was sent and " + doubt.stopped()
	}
	return res, &InDoubtError{msg: msg, err: err}
}

// sqlStateQueryCanceled is what Redshift returns for a statement it canceled,
// statement_timeout included ("Query (n) cancelled on user's request").
const sqlStateQueryCanceled = "57014"

// timedOut explains a load statement Redshift canceled under
// statement_timeout. The caller's context was still live, so the cancel was
// the timeout and not the sink giving up. A canceled LOCK means another
// writer kept the staging table for longer than the timeout.
func (d *db) timedOut(step string, t *table, err error) string {
	what := fmt.Sprintf("Redshift %s for table %s", step, rsql.Ident(t.name))
	if step == "LOCK" {
		what = fmt.Sprintf("Waiting for the lock on staging table %s (another writer of %s is loading, or stalled, while holding it)",
			rsql.Ident(t.staging), rsql.Ident(t.name))
	}
	return fmt.Sprintf("%s timed out after %s (statement_timeout) %s", what, d.timeout, describeRetry(err))
}

// attempt is what one run of the load transaction did.
type attempt struct {
	steps    []string // the plan's statement names
	step     string   // the statement that failed, or "connection"
	answered int      // statements answered
	inserted int64    // rows the INSERT added, once committed
	applied  int64    // upsert: staged changes already applied, once committed
	deleted  int64    // upsert: target rows of changed keys deleted, once committed
	dups     []string // ids the duplicates SELECT returned, once committed
	// inDoubt: the transaction was sent and its answers stopped before
	// COMMIT's, with no error from the server: it may have committed.
	inDoubt bool
}

// stopped says where the answers of an attempt in doubt stopped.
func (a attempt) stopped() string {
	if a.answered == 0 {
		return "no answer came back"
	}
	return "the answers stopped after " + a.steps[a.answered-1] + "'s"
}

// loadOnce runs the transaction once.
//
// The six statements go in one simple-protocol query, one round trip. The
// server answers each statement it completes, in order, and stops at the
// first error, so the number of answers before the error is the index of
// the statement that failed: its name and SQLSTATE are reported exactly as
// when each statement was sent on its own. A failure leaves the session in
// the aborted transaction; ROLLBACK, a second round trip on the failure
// path only, ends it before the connection goes back to the pool.
func (d *db) loadOnce(ctx context.Context, plan loadPlan) (attempt, error) {
	a := attempt{steps: plan.steps, step: "connection"}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return a, err
	}
	// Release destroys a connection that is not idle (a failed ROLLBACK).
	defer conn.Release()
	pc := conn.Conn().PgConn()
	done, affected, dups, err := execLoad(ctx, pc, plan)
	a.answered = done
	a.step = plan.steps[min(done, len(plan.steps)-1)]
	if done == len(plan.steps) {
		// COMMIT was answered: the rows are in, whatever happened to the
		// connection after it.
		a.inserted, a.dups = affected[plan.insert], dups
		if plan.upsert {
			a.applied, a.deleted = affected[plan.applied], affected[plan.deleted]
		}
		return a, nil
	}
	if err == nil {
		err = fmt.Errorf("Redshift answered %d of the %d statements of the load transaction", done, len(plan.steps))
	}
	var pe *pgconn.PgError
	a.inDoubt = !errors.As(err, &pe) && !errors.Is(err, pgx.ErrTxCommitRollback) && !pgconn.SafeToRetry(err)
	if !pc.IsClosed() && pc.TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = pc.Exec(rctx, "ROLLBACK").Close()
	}
	return a, err
}

// execLoad sends the load transaction and reads its answers. done counts
// the statements the server completed before an error or the end;
// affected holds each one's rows affected.
func execLoad(ctx context.Context, pc *pgconn.PgConn, plan loadPlan) (done int, affected []int64, dups []string, err error) {
	affected = make([]int64, len(plan.steps))
	mrr := pc.Exec(ctx, plan.sql)
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		if done == plan.dups {
			for rr.NextRow() {
				dups = append(dups, string(rr.Values()[0]))
			}
		}
		tag, rerr := rr.Close()
		if rerr != nil {
			_ = mrr.Close()
			return done, nil, nil, rerr
		}
		affected[done] = tag.RowsAffected()
		switch done {
		case plan.commit:
			// PostgreSQL answers COMMIT of an aborted transaction with
			// ROLLBACK and no error; nothing was committed.
			if tag.String() == "ROLLBACK" {
				_ = mrr.Close()
				return done, nil, nil, pgx.ErrTxCommitRollback
			}
		}
		done++
	}
	if err := mrr.Close(); err != nil {
		return done, affected, dups, err
	}
	return done, affected, dups, nil
}

// describeRetry renders a retry.Do error as "after N attempts: <error>".
func describeRetry(err error) string {
	var re *retry.Error
	if errors.As(err, &re) {
		noun := "attempts"
		if re.Attempts == 1 {
			noun = "attempt"
		}
		msg := fmt.Sprintf("after %d %s: %s", re.Attempts, noun, describeErr(re.Err))
		if re.CtxErr != nil && !errors.Is(re.Err, re.CtxErr) {
			msg += " (stopped: " + re.CtxErr.Error() + ")"
		}
		return msg
	}
	return ": " + describeErr(err)
}

// describeErr adds a database error's detail and hint, where Redshift puts
// the useful part of a load error, to its message, and says what a refused
// login or a TLS certificate that does not verify means.
func describeErr(err error) string {
	msg := err.Error()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		if h := certHint(err); h != "" {
			msg += "; " + h
		}
		return msg
	}
	if retry.IsAuth(err) {
		// After open this is a password changed on the cluster (with IAM,
		// the issued user dropped or its grants revoked): the pool's new
		// connections fail while old ones may still work.
		msg += "; Redshift refused the user or password of connection_string (with auth = iam: the user of the issued credentials)"
	}
	if pe.Detail != "" {
		msg += "; detail: " + strings.TrimSpace(pe.Detail)
	}
	if pe.Hint != "" {
		msg += "; hint: " + pe.Hint
	}
	return msg
}
