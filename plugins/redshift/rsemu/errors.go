package rsemu

import (
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Error is an error the emulator sends to a client instead of, or in front
// of, what PostgreSQL would say. It becomes a pgproto3.ErrorResponse, so a
// client sees it as a *pgconn.PgError with the same fields.
type Error struct {
	// Severity is ERROR unless set. FATAL also closes the connection, as a
	// server does after sending one.
	Severity string
	// Code is the SQLSTATE, e.g. XX000.
	Code    string
	Message string
	Detail  string
	Hint    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (SQLSTATE %s)", e.severity(), e.Message, e.Code)
}

func (e *Error) severity() string {
	if e.Severity == "" {
		return "ERROR"
	}
	return e.Severity
}

func (e *Error) fatal() bool { return e.Severity == "FATAL" || e.Severity == "PANIC" }

func (e *Error) response() *pgproto3.ErrorResponse {
	return &pgproto3.ErrorResponse{
		Severity:            e.severity(),
		SeverityUnlocalized: e.severity(),
		Code:                e.Code,
		Message:             e.Message,
		Detail:              e.Detail,
		Hint:                e.Hint,
	}
}

// SQLSTATE values the emulator uses.
const (
	CodeInternal           = "XX000" // what Redshift uses for most load and serialization errors
	CodeFeatureNotSupp     = "0A000"
	CodeSyntax             = "42601"
	CodeUndefinedTable     = "42P01"
	CodeUndefinedColumn    = "42703"
	CodeStringTooLong      = "22001"
	CodeAdminShutdown      = "57P01"
	CodeInvalidPassword    = "28P01"
	CodeProtocolViolation  = "08P01"
	CodeInvalidParamValue  = "22023"
	CodeInsufficientPrivil = "42501"
	CodeQueryCanceled      = "57014"
)

// queryIDs numbers the query ids of emulated cancellation messages.
var queryIDs atomic.Int64

// QueryCanceled is what Redshift says when it cancels a statement, be it
// for statement_timeout or a cancel request: SQLSTATE 57014 and
// "Query (<id>) cancelled on user's request", with no word of which.
func QueryCanceled() *Error {
	return &Error{Code: CodeQueryCanceled, Message: fmt.Sprintf("Query (%d) cancelled on user's request", 1000+queryIDs.Add(1))}
}

// SerializableViolation is the error Redshift raises when concurrent
// transactions cannot be serialized (error 1023). As on Redshift the message
// is just "1023" and the table id and transaction ids are in the detail; the
// SQLSTATE is XX000, not PostgreSQL's 40001.
func SerializableViolation(tableID int) *Error {
	return &Error{
		Code:    CodeInternal,
		Message: "1023",
		Detail:  fmt.Sprintf("Serializable isolation violation on table - %d, transactions forming the cycle are: 4417, 4418 (pid:1073)", tableID),
	}
}

// AdminShutdown is the FATAL 57P01 a server sends before closing a session
// it was told to terminate (pg_terminate_backend, a restart, a failover).
func AdminShutdown() *Error {
	return &Error{Severity: "FATAL", Code: CodeAdminShutdown, Message: "terminating connection due to administrator command"}
}

// notEmulated is the loud refusal for Redshift syntax the emulator does not
// implement: a test that reaches it must not pass by accident.
func notEmulated(what string) *Error {
	return &Error{
		Code:    CodeFeatureNotSupp,
		Message: "rsemu: " + what + " is not supported by the Redshift emulator",
		Hint:    "see plugins/redshift/rsemu/README.md for what is emulated",
	}
}

func syntaxError(near string) *Error {
	if near == "" {
		return &Error{Code: CodeSyntax, Message: "syntax error at end of input"}
	}
	return &Error{Code: CodeSyntax, Message: fmt.Sprintf("syntax error at or near %q", near)}
}
