// Package sdk is the Go side of the PicoMQ sink plugin ABI (include/picomq_sink.h).
//
// A plugin implements [Sink] for its typed config struct and registers it once
// from its package main:
//
//	func init() { sdk.Register(sdk.Plugin[Config]{Name: "delta_sink", New: newSink}) }
//
// and imports shared/sdk/cabi for the C exports. Everything else lives here
// and is plain Go, testable without cgo:
//
//   - sink.go      the Sink interface, Plugin registration and the per-instance Host
//   - errors.go    the error taxonomy and the one function mapping errors to ABI results
//     (the result codes, reject reasons and ABI version are shared/abi's)
//   - config.go    config declared once in struct tags: decoding, env overrides,
//     defaults, secrets, and the schema describe() prints; CheckConfig runs
//     the same checks on describe()'s list, for a host checking a definition
//   - batch.go     batches and records as the host lends them, payload checks by schema
//   - pipelined.go pipelined batches (ABI 1.5): the rule, Pending (Batch.Self, Batch.Pred)
//   - sequencer.go each instance's sequencer: finds a pipelined batch's predecessor,
//     waits (bounded) for one delivered late, answers RETRY when it was not written
//   - log.go       the slog handler that forwards to the host's log callback
//   - instance.go  open instances, serialised calls, panics recovered, metrics
//   - metrics.go   metric declarations (type, unit, Prometheus name) for describe()
//   - commits.go   the newest commit per destination, metrics()'s "last_commits"
//   - describe.go  the static describe() document
//
// Secrets declared in the config (and any the plugin adds with Host.Redact)
// are scrubbed from every log line, error text and metrics snapshot that
// leaves an instance.
package sdk
