// Package retry runs a SQL statement again when it failed for a reason that
// may go away: a dropped connection, a pool that had no connection free in
// time, or a server error whose SQLSTATE says "try again" (serialization
// failure, deadlock, shutdown). Everything else fails at once.
//
// Use Do around each statement a sink sends to a Postgres-protocol database
// (the Redshift sink wraps COPY, INSERT and TRUNCATE). Do not use it for
// object-store calls: the sinks never retry those themselves.
//
// The classification lives in one ordered table in classify.go; IsTransient
// exposes it, IsAuth singles out refused credentials (a configuration
// problem), and SQLState pulls the code out of an error for messages.
// Errors returned by Do keep the original error reachable through
// errors.Is and errors.As, so a *pgconn.PgError is never hidden.
package retry
