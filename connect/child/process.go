package child

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// ErrExited matches the error of a call made while the child process died.
var ErrExited = errors.New("plugin host process exited")

// Process is one plugin library in a child host process, started on first
// use and restarted after it dies.
type Process struct {
	bin, lib string
	workers  int
	log      *slog.Logger
	stderr   io.Writer

	mu        sync.Mutex
	h         *hostclient.Host
	l         *hostclient.Lib
	gen       int // bumped by every start: instances reopen when it changes
	restarts  int
	closed    bool
	checks    []string // the library's describe() payload_checks
	conc      bool     // the library's describe() concurrent_consume
	redrive   bool     // the library's describe() redrive (ABI 1.4)
	pipelined bool     // the library's describe() pipelined (ABI 1.5)
	desc      string   // the library's describe() document; "" when it failed
	loggers   sync.Map // log ctx (uint64) -> *slog.Logger of the instance
}

// Options for New. Zero values take the defaults.
type Options struct {
	// Workers is the number of host threads calling into the plugin;
	// default 4. Each call in flight holds one: picomq-connect gives a
	// library at least the batches its blocks may have in flight
	// (max_in_flight), plus one for metrics and close.
	Workers int
	// Logger receives the runtime's lines about the process and, at their
	// own level, the plugin's lines; default slog.Default().
	Logger *slog.Logger
	// Stderr receives what the child writes to stderr (a plugin logging
	// without the callback, crash reports); default: discarded, but the
	// tail is kept for the error of a dead child.
	Stderr io.Writer
}

// MaxWorkers is the most host worker threads a child may have
// (hostclient.Workers' range).
const MaxWorkers = 256

// WorkersFor is the worker threads of a library's child: least (--workers),
// or, when the blocks of the sinks using the library may have more batches
// in flight than that (the sum of their max_in_flight), one per batch plus
// one, so that metrics() and close() never queue behind consumes; at most
// MaxWorkers.
func WorkersFor(least, inFlight int) int {
	return min(max(least, inFlight+1), MaxWorkers)
}

// New returns a Process for the library at lib, run by the host binary
// bin. Nothing starts until the first Open.
func New(bin, lib string, o Options) *Process {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Process{bin: bin, lib: lib, workers: o.Workers, log: o.Logger.With("library", lib), stderr: o.Stderr}
}

// current returns the running child and its library, starting a child
// first when there is none or the last one died.
func (p *Process) current(ctx context.Context) (*hostclient.Host, *hostclient.Lib, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil, 0, errors.New("plugin process closed")
	}
	if p.h != nil && p.h.Err() == nil {
		return p.h, p.l, p.gen, nil
	}
	if p.h != nil {
		p.restarts++
		p.log.Warn("plugin host process exited; starting a new one", "event", "host_exited", "err", p.h.Err(), "restarts", p.restarts)
		p.h, p.l = nil, nil
	}
	opts := []hostclient.Option{hostclient.Workers(p.workers), hostclient.KeepLogs(1), hostclient.OnLog(p.onLog)}
	if p.stderr != nil {
		opts = append(opts, hostclient.Stderr(p.stderr))
	}
	h, err := hostclient.Start(ctx, p.bin, opts...)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("starting plugin host %s: %w", p.bin, err)
	}
	// Loading runs the library's initialisation and describe() runs its
	// code: both are bounded by ctx, since p.mu is held meanwhile and a
	// library that never answers would otherwise hold every caller, and the
	// shutdown, forever.
	l, err := h.Load(p.lib, hostclient.WithContext(ctx))
	if err != nil {
		h.Kill()
		return nil, nil, 0, fmt.Errorf("%s: %w", p.lib, err) // the error says "load: "
	}
	d, err := describe(ctx, l, p.log)
	if err != nil {
		h.Kill()
		return nil, nil, 0, fmt.Errorf("%s: describe: %w", p.lib, err)
	}
	p.h, p.l = h, l
	p.checks, p.conc, p.redrive, p.pipelined, p.desc = d.PayloadChecks, d.ConcurrentConsume, d.Redrive, d.Pipelined, d.js
	p.gen++
	p.log.Info("plugin host process started", "event", "host_started", "pid", h.Pid(), "generation", p.gen)
	return h, l, p.gen, nil
}

// description is what the runtime reads of a library's describe().
type description struct {
	// PayloadChecks are the schemas whose payloads the library checks
	// itself; the runtime checks the others.
	PayloadChecks []string `json:"payload_checks"`
	// ConcurrentConsume: concurrent consume calls of one instance run
	// together (otherwise the plugin serialises them).
	ConcurrentConsume bool `json:"concurrent_consume"`
	// Redrive (ABI 1.4): the library takes redrive batches exactly once.
	Redrive bool `json:"redrive"`
	// Pipelined (ABI 1.5): the library keeps the order of pipelined
	// batches (hostclient.Batch.Follows) itself.
	Pipelined bool   `json:"pipelined"`
	js        string // the document; "" when describe failed
}

// describe reads the library's describe(). A library that does not say,
// or whose description cannot be read, checks no payload (the runtime
// checks them all) and runs one consume at a time. The error is ctx's,
// only when it ended first.
func describe(ctx context.Context, l *hostclient.Lib, log *slog.Logger) (description, error) {
	js, err := l.Describe(hostclient.WithContext(ctx))
	if err != nil && ctx.Err() != nil {
		return description{}, err
	}
	if err != nil {
		log.Warn("describe failed; the runtime checks every payload itself", "err", err)
		return description{}, nil
	}
	var d description
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		log.Warn("describe returned no JSON object; the runtime checks every payload itself", "err", err)
		return description{js: js}, nil
	}
	d.js = js
	return d, nil
}

// Description returns the library's describe() document as read when its
// child last started; "" before the first start or when describe failed.
func (p *Process) Description() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.desc
}

// ChecksPayloads reports whether the library checks the payloads of a
// schema's batches itself (the runtime spec has the runtime check json and
// text payloads), so the runtime can leave the check to it. False before
// the first start.
func (p *Process) ChecksPayloads(schema string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.checks, schema)
}

// ConcurrentConsume reports whether the library declares
// concurrent_consume: concurrent consume calls of one instance run
// together. False before the first start.
func (p *Process) ConcurrentConsume() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conc
}

// Redrive reports whether the library declares redrive (ABI 1.4): it
// takes batches of dead letters put back with their original coordinates
// (hostclient.Batch.Redrive) exactly once. False before the first start.
func (p *Process) Redrive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.redrive
}

// Pipelined reports whether the library declares pipelined (ABI 1.5): a
// partition's next batch may be sent before the one before it was
// answered (hostclient.Batch.Follows). False before the first start.
func (p *Process) Pipelined() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pipelined
}

// onLog forwards a plugin's log line to its instance's logger. It runs on
// the driver's read loop and must not block: slog handlers write and
// return.
func (p *Process) onLog(l hostclient.LogLine) {
	log := p.log
	if v, ok := p.loggers.Load(l.Ctx); ok {
		log = v.(*slog.Logger)
	}
	if l.Late {
		log = log.With("late", true)
	}
	log.Log(context.Background(), l.Level, l.Message, "source", "plugin")
}

// Pid returns the pid of the running child, 0 when there is none.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil || p.h.Err() != nil {
		return 0
	}
	return p.h.Pid()
}

// Restarts returns how many times the child was started again after it
// died.
func (p *Process) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// Close ends the child: it finishes the calls it has, closes instances
// still open, and exits (killed after 30 s). Close the instances first to
// see their errors.
func (p *Process) Close() error { return p.Shutdown(context.Background()) }

// Shutdown is Close bounded by ctx: when ctx ends first, or has ended
// already, the child is killed (with every call it still runs) and
// Shutdown returns an error saying so. No child is started after it.
func (p *Process) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	h := p.h
	p.closed = true
	p.mu.Unlock()
	if h == nil {
		return nil
	}
	if ctx.Err() == nil {
		closed := make(chan error, 1)
		go func() { closed <- h.Close() }()
		select {
		case err := <-closed:
			return err
		case <-ctx.Done():
		}
	}
	if h.Err() != nil {
		return nil // it exited as ctx ended; Close reports how
	}
	pid := h.Pid()
	h.Kill()
	return fmt.Errorf("plugin host %d killed: %w", pid, context.Cause(ctx))
}

// abandon kills h, the child a call was abandoned in, unless it has ended
// already: what the call does there must stop before the caller goes on.
func (p *Process) abandon(h *hostclient.Host, why string) {
	if h.Err() != nil {
		return
	}
	p.log.Warn("killing the plugin host: "+why, "event", "host_killed", "pid", h.Pid())
	h.Kill()
}

// isContextErr reports an error that is a context's: a call the caller
// stopped waiting for, not one the plugin or the child returned.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// exited wraps an error from a dead child so that it matches ErrExited.
func exited(err error) error {
	var ee *hostclient.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%w: %w", ErrExited, err)
	}
	return err
}

// exitedFrom is exited for a call on h. A call can fail on a dying child
// before the driver has seen the exit, for example writing the request to
// a closed pipe (EPIPE); any error that is not the plugin's own status
// then waits a little for h to end, and counts as an exit if it did.
func exitedFrom(h *hostclient.Host, err error) error {
	var se *hostclient.StatusError
	if err == nil || errors.As(err, &se) || isContextErr(err) {
		return err // a context's error: the caller gave up, the child may be fine
	}
	if err = exited(err); errors.Is(err, ErrExited) {
		return err
	}
	select {
	case <-h.Done():
		return fmt.Errorf("%w: %w (%w)", ErrExited, h.Err(), err)
	case <-time.After(exitGrace):
		return err
	}
}

// exitGrace is how long a failed call waits to see whether its child is
// exiting.
const exitGrace = 2 * time.Second
