package retry_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/picomq/heavy-sinks/internal/testenv/testca"
	"github.com/picomq/heavy-sinks/shared/retry"
)

func pgErr(code, msg string) *pgconn.PgError {
	return &pgconn.PgError{Severity: "ERROR", Code: code, Message: msg}
}

func wrap(err error) error { return fmt.Errorf("redshift COPY: %w", err) }

// safeToRetryErr mimics pgconn's unexported errors that report whether the
// statement reached the server.
type safeToRetryErr struct {
	safe bool
	err  error
}

func (e *safeToRetryErr) Error() string     { return "pgconn: " + e.err.Error() }
func (e *safeToRetryErr) SafeToRetry() bool { return e.safe }
func (e *safeToRetryErr) Unwrap() error     { return e.err }

type netErr struct{ timeout bool }

func (e netErr) Error() string   { return "net error" }
func (e netErr) Timeout() bool   { return e.timeout }
func (e netErr) Temporary() bool { return false }

type otherDriverErr struct{ code string }

func (e otherDriverErr) Error() string    { return "driver error " + e.code }
func (e otherDriverErr) SQLState() string { return e.code }

func TestIsTransientSQLStates(t *testing.T) {
	tests := []struct {
		code string
		want bool
	}{
		{"40001", true},  // serialization_failure
		{"40P01", true},  // deadlock_detected
		{"57P01", true},  // admin_shutdown
		{"57P02", true},  // crash_shutdown
		{"57P03", true},  // cannot_connect_now
		{"08000", true},  // connection_exception
		{"08003", true},  // connection_does_not_exist
		{"08006", true},  // connection_failure
		{"40000", false}, // transaction_rollback: only the listed subclasses retry
		{"40002", false}, // transaction_integrity_constraint_violation
		{"08001", false}, // not in the spec's list
		{"08004", false}, // server rejected the connection
		{"57014", false}, // query_canceled, e.g. statement_timeout
		{"28P01", false}, // invalid_password: a configuration problem, see IsAuth
		{"28000", false}, // invalid_authorization_specification
		{"42601", false}, // syntax_error
		{"42P01", false}, // undefined_table
		{"23505", false}, // unique_violation
		{"XX000", false}, // internal_error with an ordinary message
		{"", false},
	}
	for _, tt := range tests {
		for _, form := range []struct {
			name string
			err  error
		}{
			{"bare", pgErr(tt.code, "something")},
			{"wrapped", wrap(pgErr(tt.code, "something"))},
			{"twice wrapped", wrap(wrap(pgErr(tt.code, "something")))},
			{"other driver", otherDriverErr{tt.code}},
		} {
			t.Run(tt.code+"/"+form.name, func(t *testing.T) {
				if got := retry.IsTransient(form.err); got != tt.want {
					t.Errorf("IsTransient(%v) = %v, want %v", form.err, got, tt.want)
				}
			})
		}
	}
}

func TestIsAuth(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"invalid_password", pgErr("28P01", `password authentication failed for user "loader"`), true},
		{"invalid_authorization_specification", pgErr("28000", `no pg_hba.conf entry for host`), true},
		{"wrapped", wrap(pgErr("28P01", "x")), true},
		{"other driver", otherDriverErr{"28P01"}, true},
		{"other class 28", pgErr("28001", "x"), false},
		{"serialization failure", pgErr("40001", "x"), false},
		{"io", io.EOF, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retry.IsAuth(tt.err); got != tt.want {
				t.Errorf("IsAuth(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if retry.IsTransient(tt.err) && tt.want {
				t.Errorf("IsTransient(%v) = true for an authentication failure", tt.err)
			}
		})
	}
}

func TestIsTransient(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain error", errors.New("boom"), false},

		// Redshift's serialization conflict, as it really arrives: the
		// number in Message, the explanation in Detail.
		{"redshift 1023", &pgconn.PgError{Severity: "ERROR", Code: "XX000", Message: "1023",
			Detail: "Serializable isolation violation on table - 119371, transactions forming the cycle are: 1745830, 1745762 (pid:15021)"}, true},
		{"redshift 1023 with text", pgErr("XX000", "1023 Serializable isolation violation on table - 100167"), true},
		{"redshift 1023 wrapped", wrap(pgErr("XX000", "1023")), true},
		{"redshift other number", pgErr("XX000", "10230 something else"), false},
		{"redshift other error", pgErr("XX000", "Invalid operation: S3ServiceException"), false},
		{"1023 under another code", pgErr("42601", "1023"), false},
		{"1023 not at the start", pgErr("XX000", "error 1023"), false},
		{"concurrent conflict, server", pgErr("XX000", "could not complete because of conflict with concurrent transaction"), true},
		{"concurrent conflict, other code", pgErr("25P02", "conflict with concurrent transaction"), true},
		{"concurrent conflict, plain", errors.New("insert: conflict with concurrent transaction"), true},

		{"io.EOF", io.EOF, true},
		{"io.EOF wrapped", wrap(io.EOF), true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"unexpected EOF in pgconn", &safeToRetryErr{false, io.ErrUnexpectedEOF}, true},
		{"conn closed", fmt.Errorf("exec: %w", pgconn.ErrConnClosed), true},
		{"ECONNRESET", syscall.ECONNRESET, true},
		{"ECONNREFUSED", syscall.ECONNREFUSED, true},
		{"EPIPE", syscall.EPIPE, true},
		{"EPIPE in SyscallError", os.NewSyscallError("write", syscall.EPIPE), true},
		{"net.OpError read", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"net.OpError dial", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("no route to host")}), true},
		{"net timeout", netErr{timeout: true}, true},
		{"os deadline", os.ErrDeadlineExceeded, true},
		{"net error, not a timeout", &net.AddrError{Err: "missing port in address", Addr: "cluster"}, false},
		{"custom net error, not a timeout", netErr{timeout: false}, false},

		{"pgconn safe to retry", &safeToRetryErr{true, errors.New("write failed")}, true},
		{"pgconn not safe to retry", &safeToRetryErr{false, errors.New("bad message")}, false},
		{"pool acquire timeout", context.DeadlineExceeded, true},
		{"pool acquire timeout wrapped", wrap(context.DeadlineExceeded), true},
		{"canceled", context.Canceled, false},
		{"canceled wrapped", wrap(context.Canceled), false},
		{"canceled before sending", &safeToRetryErr{true, context.Canceled}, false},
		{"server error beats I/O in a join", errors.Join(pgErr("42601", "syntax error"), io.EOF), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retry.IsTransient(tt.err); got != tt.want {
				t.Errorf("IsTransient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// The cases above imitate pgx's errors; these get real ones from pgconn
// talking to loopback sockets, so a change in how pgx reports failures
// shows up here.
func TestIsTransientRealPgconnErrors(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		addr := closedPort(t)
		_, err := pgconn.Connect(t.Context(), "postgres://u@"+addr+"/db?sslmode=disable")
		if err == nil || !retry.IsTransient(err) {
			t.Errorf("IsTransient(%v) = false, want true", err)
		}
	})
	t.Run("server never answers, own deadline", func(t *testing.T) {
		addr := silentServer(t)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := pgconn.Connect(ctx, "postgres://u@"+addr+"/db?sslmode=disable")
		if err == nil || !retry.IsTransient(err) {
			t.Errorf("IsTransient(%v) = false, want true", err)
		}
	})
	t.Run("certificate from an unknown CA", func(t *testing.T) {
		addr := tlsServer(t, testca.New(t, "server CA").ServerConfig(t, "127.0.0.1"))
		root := testca.New(t, "client CA").File(t)
		for _, mode := range []string{"verify-ca", "verify-full"} {
			_, err := pgconn.Connect(t.Context(), "postgres://u@"+addr+"/db?sslmode="+mode+"&sslrootcert="+root)
			if err == nil || retry.IsTransient(err) {
				t.Errorf("%s: IsTransient(%v) = true, want false", mode, err)
			}
		}
	})
	t.Run("certificate for another host", func(t *testing.T) {
		ca := testca.New(t, "server CA")
		addr := tlsServer(t, ca.ServerConfig(t, "cluster.other.example"))
		_, err := pgconn.Connect(t.Context(), "postgres://u@"+addr+"/db?sslmode=verify-full&sslrootcert="+ca.File(t))
		if err == nil || retry.IsTransient(err) {
			t.Errorf("IsTransient(%v) = true, want false", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		addr := silentServer(t)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := pgconn.Connect(ctx, "postgres://u@"+addr+"/db?sslmode=disable")
		if err == nil || retry.IsTransient(err) {
			t.Errorf("IsTransient(%v) = true, want false", err)
		}
	})
}

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// tlsServer answers every SSLRequest 'S' and completes the handshake with
// cfg, then closes: enough for a client to verify the certificate.
func tlsServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := io.ReadFull(c, make([]byte, 8)); err != nil { // SSLRequest
					return
				}
				if _, err := c.Write([]byte("S")); err != nil {
					return
				}
				_ = tls.Server(c, cfg).Handshake()
			}()
		}
	}()
	return l.Addr().String()
}

// silentServer accepts connections and never writes to them.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l.Addr().String()
}

func TestSQLState(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain", errors.New("boom"), ""},
		{"pg error", pgErr("40001", "could not serialize access"), "40001"},
		{"wrapped", wrap(pgErr("23505", "duplicate key")), "23505"},
		{"other driver", otherDriverErr{"57P01"}, "57P01"},
		{"retry error", &retry.Error{Attempts: 3, Err: pgErr("40P01", "deadlock")}, "40P01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retry.SQLState(tt.err); got != tt.want {
				t.Errorf("SQLState(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
