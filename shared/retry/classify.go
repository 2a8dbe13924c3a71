package retry

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// rule is one line of the classification table.
type rule struct {
	match     func(error) bool
	transient bool
}

// rules is tried in order and the first match decides; an error matching no
// rule is permanent. Order matters where an error matches several rules.
var rules = []rule{
	// Cancellation is the caller giving up. It comes first because pgconn
	// marks a statement refused on an already-canceled context SafeToRetry.
	{is(context.Canceled), false},

	// Server errors the spec names as transient.
	{sqlState("40001"), true}, // serialization_failure
	{sqlState("40P01"), true}, // deadlock_detected
	{sqlState("57P01"), true}, // admin_shutdown
	{sqlState("57P02"), true}, // crash_shutdown
	{sqlState("57P03"), true}, // cannot_connect_now
	{sqlState("08000"), true}, // connection_exception
	{sqlState("08003"), true}, // connection_does_not_exist
	{sqlState("08006"), true}, // connection_failure
	// Redshift reports a serializable isolation violation as an internal
	// error (XX000) with message "1023" and the story in Detail.
	{redshiftSerializable, true},
	{messageContains("conflict with concurrent transaction"), true},
	// Any other server error means the server saw the statement and
	// refused it; sending it again will not change its mind.
	{isPgError, false},

	// pgconn knows when nothing reached the server.
	{pgconn.SafeToRetry, true},

	// pgxpool reports "no connection free before ctx's deadline" as the bare
	// ctx.Err(), and pgconn wraps a statement's deadline the same way. When
	// the deadline was the caller's own, Do stops before consulting this.
	{is(context.DeadlineExceeded), true},

	// I/O failures: the connection broke under the statement.
	{is(io.ErrUnexpectedEOF), true},
	{is(io.EOF), true},
	{is(syscall.ECONNRESET), true},
	{is(syscall.ECONNREFUSED), true},
	{is(syscall.EPIPE), true},
	// A connection that died under an earlier statement: pgconn reports
	// "conn closed" for every later use. The retried operation takes a
	// fresh connection from the pool.
	{is(pgconn.ErrConnClosed), true},
	{isNetOpError, true},
	{isNetTimeout, true},
}

// IsTransient reports whether err may succeed if the same statement is sent
// again. It is false for nil.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	for _, r := range rules {
		if r.match(err) {
			return r.transient
		}
	}
	return false
}

// SQLState returns the SQLSTATE carried by err or anything it wraps, or ""
// if there is none. Any error with a SQLState() string method counts, not
// only *pgconn.PgError.
func SQLState(err error) string {
	var e interface{ SQLState() string }
	if errors.As(err, &e) {
		return e.SQLState()
	}
	return ""
}

func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func sqlState(code string) func(error) bool {
	return func(err error) bool { return SQLState(err) == code }
}

func messageContains(s string) func(error) bool {
	return func(err error) bool { return strings.Contains(err.Error(), s) }
}

func isPgError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// redshiftSerializable matches message "1023" or "1023 ..." but not, say,
// "10230", which would be some other Redshift error number.
func redshiftSerializable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "XX000" {
		return false
	}
	rest, ok := strings.CutPrefix(pe.Message, "1023")
	return ok && (rest == "" || rest[0] < '0' || rest[0] > '9')
}

func isNetOpError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe)
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
