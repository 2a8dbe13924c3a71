package child

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Instance is one open sink instance of a Process. Its Consume calls run
// one at a time (the blocks of a sink share it), unless AllowOverlap was
// called: then they run on different host threads at once (a block with
// max_in_flight > 1 hands it batches of several partitions), and the plugin
// runs them together when it declares concurrent_consume, one at a time
// otherwise. Close waits for the calls in flight.
type Instance struct {
	p      *Process
	config string
	log    *slog.Logger

	overlap atomic.Bool
	serial  sync.Mutex // held by each Consume for its call unless overlap
	// calls is held shared by each Consume for its whole call and
	// exclusively by Close, which so never overlaps a consume.
	calls sync.RWMutex
	mu    sync.Mutex       // h, inst, gen: held while the instance (re)opens
	h     *hostclient.Host // the child inst lives in
	inst  *hostclient.Instance
	gen   int
	// open is h and inst for Metrics, which must not wait for mu: a
	// consume holds it for the whole call, and metrics() never waits for
	// a consume (the header's threading rules).
	open atomic.Pointer[opened]
}

type opened struct {
	h    *hostclient.Host
	inst *hostclient.Instance
}

// Open opens an instance with config, the JSON of
// definition.Definition.OpenConfig: Instance, then Instance.Open. log
// receives the instance's plugin lines.
func (p *Process) Open(ctx context.Context, config string, log *slog.Logger) (*Instance, error) {
	i := p.Instance(config, log)
	if err := i.Open(ctx); err != nil {
		return nil, err
	}
	return i, nil
}

// Instance returns an instance of p that is not open yet: Open opens it,
// or its first Consume does. config is the JSON of
// definition.Definition.OpenConfig; log receives the instance's plugin
// lines.
func (p *Process) Instance(config string, log *slog.Logger) *Instance {
	return &Instance{p: p, config: config, log: log}
}

// Open opens the instance in the child, starting the child first when it
// does not run; nil when the instance is open already. An error is the
// plugin's *hostclient.StatusError (RETRY means "open again later"), one
// matching ErrExited when the child died, ctx's error, or the failure to
// start the child or load the library. The runtime opens every instance
// before it consumes, so that a refused configuration is seen before any
// record is fetched.
func (i *Instance) Open(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.ensure(ctx)
}

// ensure opens the instance in the current child, again after a restart.
func (i *Instance) ensure(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err // no new child for a caller that has given up
	}
	h, lib, gen, err := i.p.current(ctx)
	if err != nil {
		return exited(err)
	}
	if i.inst != nil && i.gen == gen {
		return nil
	}
	reopen := i.inst != nil
	// The log context is the open request's id, known only once it is sent;
	// lines logged during open go to the process logger.
	inst, err := lib.Open(i.config, hostclient.WithContext(ctx))
	if err != nil {
		if reopen {
			return exitedFrom(h, fmt.Errorf("reopening after a plugin host restart: %w", err))
		}
		return exitedFrom(h, err)
	}
	if i.log != nil {
		i.p.loggers.Store(inst.Ctx(), i.log)
	}
	i.h, i.inst, i.gen = h, inst, gen
	i.open.Store(&opened{h, inst})
	return nil
}

// Consume hands b to the plugin: nil for OK, with the records it rejected
// when b.AcceptRejections is set (ABI 1.1), a *hostclient.StatusError for
// RETRY, FATAL and the host's own codes, and an error matching ErrExited
// when the child died (before or during the call).
//
// When ctx ends before the plugin answered, Consume kills the child before
// it returns ctx's error: the caller has given up on the batch (the
// runtime's shutdown timeout passed) and may let another consumer have its
// partition, so the plugin must not go on writing it. The next call starts
// a new child.
func (i *Instance) Consume(ctx context.Context, b hostclient.Batch) ([]hostclient.Rejection, error) {
	if !i.overlap.Load() {
		i.serial.Lock()
		defer i.serial.Unlock()
	}
	i.calls.RLock()
	defer i.calls.RUnlock()
	i.mu.Lock()
	err := i.ensure(ctx)
	h, inst := i.h, i.inst
	i.mu.Unlock()
	if err != nil {
		return nil, err
	}
	rej, err := inst.ConsumeResult(b, hostclient.WithContext(ctx))
	if err != nil && ctx.Err() != nil && isContextErr(err) {
		i.p.abandon(h, "a consume was abandoned when its context ended")
		return nil, err
	}
	return rej, exitedFrom(h, err)
}

// ChecksPayloads reports whether the instance's library checks the
// payloads of a schema's batches itself (Process.ChecksPayloads).
func (i *Instance) ChecksPayloads(schema string) bool { return i.p.ChecksPayloads(schema) }

// AllowOverlap lets Consume calls of the instance run at once, for a sink
// that asks for batches in flight (max_in_flight above 1); call it before
// the first Consume. Without it they run one at a time, as they always
// did: a sink's blocks share the instance.
func (i *Instance) AllowOverlap() { i.overlap.Store(true) }

// ConcurrentConsume reports whether the instance's library runs
// concurrent consume calls of one instance together
// (Process.ConcurrentConsume).
func (i *Instance) ConcurrentConsume() bool { return i.p.ConcurrentConsume() }

// Redrive reports whether the instance's library takes redrive batches
// (Process.Redrive); known once the instance opened.
func (i *Instance) Redrive() bool { return i.p.Redrive() }

// Pipelined reports whether the instance's library keeps the order of
// pipelined batches (Process.Pipelined); known once the instance opened.
func (i *Instance) Pipelined() bool { return i.p.Pipelined() }

// Description returns the instance's library's describe() document
// (Process.Description): /metrics reads its metric declarations.
func (i *Instance) Description() string { return i.p.Description() }

// Destination returns where the sink writes as configured: the value of
// the plugin_config key its library's describe() marks "destination" (a
// table URI or name, template placeholders unresolved), with the
// environment overrides applied as the plugin's open applies them. It is
// the table label of the freshness metrics, one value per sink; "" before
// the library was described, or when it marks no key (an older plugin).
func (i *Instance) Destination() string {
	var d struct {
		Config []sdk.Field `json:"plugin_config"`
	}
	var o struct {
		Key          string          `json:"key"`
		PluginConfig json.RawMessage `json:"plugin_config"`
	}
	if json.Unmarshal([]byte(i.Description()), &d) != nil || json.Unmarshal([]byte(i.config), &o) != nil {
		return ""
	}
	return sdk.Destination(d.Config, o.PluginConfig, o.Key, sdk.EnvFrom(os.Environ()))
}

// ErrNotOpen is the error of Metrics while the instance is not open: its
// child died and the next Consume reopens it, or it was closed.
var ErrNotOpen = errors.New("instance not open")

// Metrics returns the instance's metrics() JSON. It runs alongside a
// Consume in flight and does not restart a dead child; ctx bounds the
// wait (a call abandoned this way still runs in the host).
func (i *Instance) Metrics(ctx context.Context) (string, error) {
	o := i.open.Load()
	if o == nil || o.h.Err() != nil {
		return "", ErrNotOpen
	}
	s, err := o.inst.Metrics(hostclient.WithContext(ctx))
	return s, exitedFrom(o.h, err)
}

// Close closes the instance in the child, if the child still runs it.
func (i *Instance) Close() error { return i.CloseContext(context.Background()) }

// CloseContext is Close bounded by ctx: when ctx ends first it returns
// ctx's error and the plugin's close goes on in the child, which the
// caller then ends (Process.Shutdown).
func (i *Instance) CloseContext(ctx context.Context) error {
	i.calls.Lock()
	defer i.calls.Unlock()
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.inst == nil {
		return nil
	}
	inst := i.inst
	i.inst = nil
	i.open.Store(nil)
	i.p.mu.Lock()
	same := i.gen == i.p.gen && i.p.h != nil && i.p.h.Err() == nil
	i.p.mu.Unlock()
	if !same {
		return nil // the child that held it is gone, and the instance with it
	}
	err := inst.Close(hostclient.WithContext(ctx))
	i.p.loggers.Delete(inst.Ctx())
	if err != nil && isContextErr(err) {
		return err
	}
	return exitedFrom(i.h, err)
}
