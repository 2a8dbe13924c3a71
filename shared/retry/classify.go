package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// class is what an error means for the caller.
type class int

const (
	permanent class = iota // sending the statement again cannot help
	transient              // the same statement may succeed if sent again
	config                 // the credentials are wrong: only the operator can fix it
)

// rule is one line of the classification table.
type rule struct {
	match func(error) bool
	class class
}

// rules is tried in order and the first match decides; an error matching no
// rule is permanent. Order matters where an error matches several rules.
var rules = []rule{
	// Cancellation is the caller giving up. It comes first because pgconn
	// marks a statement refused on an already-canceled context SafeToRetry.
	{is(context.Canceled), permanent},

	// Server errors the spec names as transient.
	{sqlState("40001"), transient}, // serialization_failure
	{sqlState("40P01"), transient}, // deadlock_detected
	{sqlState("57P01"), transient}, // admin_shutdown
	{sqlState("57P02"), transient}, // crash_shutdown
	{sqlState("57P03"), transient}, // cannot_connect_now
	{sqlState("08000"), transient}, // connection_exception
	{sqlState("08003"), transient}, // connection_does_not_exist
	{sqlState("08006"), transient}, // connection_failure
	// Redshift reports a serializable isolation violation as an internal
	// error (XX000) with message "1023" and the story in Detail.
	{redshiftSerializable, transient},
	{messageContains("conflict with concurrent transaction"), transient},
	// A refused login (also inside a *pgconn.ConnectError) is a wrong
	// user or password in the connection string: retrying sends the same
	// credentials again.
	{sqlState("28P01"), config}, // invalid_password
	{sqlState("28000"), config}, // invalid_authorization_specification
	// query_canceled: statement_timeout ran out (the Redshift sink bounds
	// its wait for the staging table lock with it) or someone canceled the
	// statement. The caller says which; sending it again at once would
	// only wait again.
	{sqlState("57014"), permanent},
	// Any other server error means the server saw the statement and
	// refused it; sending it again will not change its mind.
	{isPgError, permanent},

	// A server certificate that does not verify fails the same way on every
	// attempt. It comes before SafeToRetry because pgconn marks the failed
	// handshake safe to retry (nothing was sent).
	{isCertificateError, permanent},

	// pgconn knows when nothing reached the server.
	{pgconn.SafeToRetry, transient},

	// pgxpool reports "no connection free before ctx's deadline" as the bare
	// ctx.Err(), and pgconn wraps a statement's deadline the same way. When
	// the deadline was the caller's own, Do stops before consulting this.
	{is(context.DeadlineExceeded), transient},

	// I/O failures: the connection broke under the statement.
	{is(io.ErrUnexpectedEOF), transient},
	{is(io.EOF), transient},
	{is(syscall.ECONNRESET), transient},
	{is(syscall.ECONNREFUSED), transient},
	{is(syscall.EPIPE), transient},
	// A connection that died under an earlier statement: pgconn reports
	// "conn closed" for every later use. The retried operation takes a
	// fresh connection from the pool.
	{is(pgconn.ErrConnClosed), transient},
	{isNetOpError, transient},
	{isNetTimeout, transient},
}

// IsTransient reports whether err may succeed if the same statement is sent
// again. It is false for nil.
func IsTransient(err error) bool { return classify(err) == transient }

// IsAuth reports whether err is the server refusing the credentials
// (SQLSTATE 28P01 or 28000): a configuration problem, never transient.
func IsAuth(err error) bool { return classify(err) == config }

func classify(err error) class {
	if err == nil {
		return permanent
	}
	for _, r := range rules {
		if r.match(err) {
			return r.class
		}
	}
	return permanent
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

// isCertificateError matches a TLS peer certificate that did not verify:
// crypto/tls's wrapper under sslmode=verify-full, the bare x509 errors
// pgx's own chain check returns under verify-ca.
func isCertificateError(err error) bool {
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid)
}

func isNetOpError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe)
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
