// Package retry runs a SQL statement again when it failed for a reason that
// may go away: a dropped connection, a pool that had no connection free in
// time, or a server error whose SQLSTATE says "try again" (serialization
// failure, deadlock, shutdown). Everything else fails at once.
//
// Use Do around each statement a sink sends to a Postgres-protocol database
// (the Redshift sink wraps COPY, INSERT and TRUNCATE). Do not use it for
// object-store calls: the Redshift sink never retries those (its spec, see
// shared/s3client's NoRetries), and the Delta sink's stores use their SDKs'
// bounded policies (objstore's GCS backend, which has no SDK, has its own
// bounded loop).
// Do's backoff is linear, Delay*n, because the Redshift spec defines
// retry_delay that way. The waits themselves come from shared/retry/backoff,
// the project's one backoff, which every other retry loop uses too (it
// imports only the standard library, so the Delta log can use it).
//
// The classification lives in one ordered table in classify.go; IsTransient
// exposes it, IsAuth singles out refused credentials (a configuration
// problem), and SQLState pulls the code out of an error for messages.
// Errors returned by Do keep the original error reachable through
// errors.Is and errors.As, so a *pgconn.PgError is never hidden.
package retry
