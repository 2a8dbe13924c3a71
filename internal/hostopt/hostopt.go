// Package hostopt holds the settings of shared/hostclient's Start and of
// its calls. It is internal so that two packages share it: hostclient, which
// puts every setting on the wire or the command line, and
// internal/testenv/hosttest, which adds the options that only tests set (an
// err_cap or a table_size the contract forbids, a 1.0 batch, a wrapper such
// as valgrind). Code outside shared/ cannot import it, so the shipped
// runtime cannot reach those settings, and hostclient exports no option for
// them.
//
// File map: hostopt.go (Start, Call).
package hostopt

import (
	"context"
	"io"
	"time"
)

// Start holds the settings of one host process. L is hostclient.LogLine:
// a type parameter because this package cannot import hostclient.
type Start[L any] struct {
	Workers     int
	Env         []string
	Stderr      io.Writer
	OnLog       func(L)
	KeepLogs    int
	ExitTimeout time.Duration

	// Test only.
	Wrapper    []string // argv the host runs under
	Quarantine int      // host flag -q; -1: the host's default
}

// Call holds the settings of one request.
type Call struct {
	Ctx    context.Context
	Worker int // -1: the least busy worker

	// Test only; the defaults are what the runtime always sends.
	ErrCap    int  // err_cap for open, consume, close
	OutCap    int  // first output buffer for describe and metrics
	TableSize int  // table_size for picomq_sink_plugin_init; 0: sizeof(picomq_sink_api)
	NoLog     bool // open passes log == NULL
	Batch1_0  bool // consume passes a 1.0 host's batch
	Batch1_2  bool // consume passes a 1.2 host's batch (no value_schema)
	Batch1_3  bool // consume passes a 1.3 host's batch (no redrive fields)
	Batch1_4  bool // consume passes a 1.4 host's batch (no pipelined fields)
	Dangling  bool // consume passes empty byte strings and arrays as a pointer that is no address
	Calls     *int // receives how many times describe or metrics was called
	// ABI, if set, is the version load passes to init instead of the host's.
	ABI *[2]uint32
}

// DefaultCall returns the settings of a call without options.
func DefaultCall() Call {
	return Call{Ctx: context.Background(), Worker: -1, ErrCap: 1024, OutCap: 64}
}
