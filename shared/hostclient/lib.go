package hostclient

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/picomq/heavy-sinks/internal/hostopt"
)

// CallOption configures one call. The options that make a request the
// runtime never sends (another err_cap, table_size or ABI version, a 1.0
// batch, no log callback), to exercise the host's contract checks, are in
// internal/testenv/hosttest.
type CallOption func(*callConfig)

// callConfig is the internal hostopt.Call so that hosttest can add options.
type callConfig = hostopt.Call

func newCallConfig(opts []CallOption) *callConfig {
	cc := hostopt.DefaultCall()
	for _, o := range opts {
		o(&cc)
	}
	return &cc
}

// OnWorker runs the call on host worker thread i (0 <= i < Host.Workers).
// By default a call runs on the worker with the fewest requests in flight.
func OnWorker(i int) CallOption { return func(c *callConfig) { c.Worker = i } }

// WithContext bounds the wait for the call's response. A call abandoned this
// way still runs in the host.
func WithContext(ctx context.Context) CallOption { return func(c *callConfig) { c.Ctx = ctx } }

// result turns a response into an error for any status but OK.
func result(o op, r response) error {
	if r.status == StatusOK {
		return nil
	}
	return &StatusError{Op: o.String(), Code: r.status, Message: r.text}
}

// Lib is a plugin library loaded into the host.
type Lib struct {
	h                  *Host
	id                 uint32
	path               string
	abiMajor, abiMinor uint32

	// pipelined caches describe()'s "pipelined" (ABI 1.5) once read: the
	// first pipelined batch reads it (see checkPipelined).
	pipeMu    sync.Mutex
	pipelined *bool
}

// Load dlopens the library at path and calls picomq_sink_plugin_init with
// the host's ABI version (Host.ABI). Loading a library already loaded
// returns a Lib with the same ID. A refusal by init is a *StatusError with
// the code init returned; a failed dlopen has Code StatusHostError.
func (h *Host) Load(path string, opts ...CallOption) (*Lib, error) {
	cc := newCallConfig(opts)
	major, minor := h.abiMajor, h.abiMinor
	if cc.ABI != nil {
		major, minor = cc.ABI[0], cc.ABI[1]
	}
	r, err := h.call(opLoad, cc, func(e *encoder, _ uint64) {
		encodeLoad(e, path, major, minor, cc.TableSize)
	})
	if err != nil {
		return nil, err
	}
	if err := result(opLoad, r); err != nil {
		return nil, err
	}
	v, err := decodeLoadText(r.text)
	if err != nil {
		return nil, fmt.Errorf("hostclient: load: %w", err)
	}
	return &Lib{h: h, id: uint32(r.value), path: path, abiMajor: v.Major, abiMinor: v.Minor}, nil
}

// ID returns the host's id for the library.
func (l *Lib) ID() uint32 { return l.id }

// Path returns the path the library was loaded from.
func (l *Lib) Path() string { return l.path }

// ABI returns the ABI version the plugin wrote into the table.
func (l *Lib) ABI() (major, minor uint32) { return l.abiMajor, l.abiMinor }

// Describe calls describe and returns its JSON.
func (l *Lib) Describe(opts ...CallOption) (string, error) {
	cc := newCallConfig(opts)
	r, err := l.h.call(opDescribe, cc, func(e *encoder, _ uint64) {
		encodeDescribe(e, l.id, cc.OutCap)
	})
	return outText(opDescribe, cc, r, err)
}

func outText(o op, cc *callConfig, r response, err error) (string, error) {
	if err != nil {
		return "", err
	}
	if cc.Calls != nil {
		*cc.Calls = int(r.value)
	}
	if err := result(o, r); err != nil {
		return "", err
	}
	return r.text, nil
}

// Open opens an instance with the given JSON sink definition. The log lines
// the plugin emits for it carry Instance.Ctx, also those logged during
// open.
func (l *Lib) Open(config string, opts ...CallOption) (*Instance, error) {
	cc := newCallConfig(opts)
	var ctx uint64
	r, err := l.h.call(opOpen, cc, func(e *encoder, id uint64) {
		ctx = id
		encodeOpen(e, l.id, ctx, cc.NoLog, cc.ErrCap, config)
	})
	if err != nil {
		return nil, err
	}
	if err := result(opOpen, r); err != nil {
		return nil, err
	}
	return &Instance{lib: l, handle: r.value, ctx: ctx}, nil
}

// Instance returns an Instance for a raw handle, which need not be valid:
// for testing calls with unknown or closed handles.
func (l *Lib) Instance(handle uint64) *Instance {
	return &Instance{lib: l, handle: handle}
}

// Instance is an instance handle of one library.
type Instance struct {
	lib    *Lib
	handle uint64
	ctx    uint64
}

// Lib returns the instance's library.
func (i *Instance) Lib() *Lib { return i.lib }

// Handle returns the picomq_instance handle open returned.
func (i *Instance) Handle() uint64 { return i.handle }

// Ctx returns the log context passed to open (0 for Lib.Instance).
func (i *Instance) Ctx() uint64 { return i.ctx }

// Consume calls consume with b; any status but OK is a *StatusError. A
// batch with AcceptRejections set must go through ConsumeResult: Consume
// then fails rather than drop rejections unseen.
func (i *Instance) Consume(b Batch, opts ...CallOption) error {
	rej, err := i.ConsumeResult(b, opts...)
	if err == nil && len(rej) > 0 {
		return fmt.Errorf("hostclient: consume: the plugin rejected %d record(s) (use ConsumeResult)", len(rej))
	}
	return err
}

// ConsumeResult calls consume with b and returns the records it rejected
// (ABI 1.1; only with b.AcceptRejections, and only when it returned OK).
func (i *Instance) ConsumeResult(b Batch, opts ...CallOption) ([]Rejection, error) {
	cc := newCallConfig(opts)
	if b.Follows != nil {
		if err := i.lib.checkPipelined(cc.Ctx, &b); err != nil {
			return nil, err
		}
	}
	r, err := i.lib.h.call(opConsume, cc, func(e *encoder, _ uint64) {
		encodeConsume(e, i.lib.id, i.handle, cc, &b)
	})
	if err != nil {
		return nil, err
	}
	return r.rejects, result(opConsume, r)
}

// checkPipelined refuses a pipelined batch (Batch.Follows set) for a
// library that does not declare "pipelined" in describe() (ABI 1.5): a 1.4
// library never reads has_follows and would write the batch even when the
// one it follows fails, moving its partition's exactly-once position past
// records that were never written. The runtime checks this before it
// pipelines (connect/child); this is the last line.
func (l *Lib) checkPipelined(ctx context.Context, b *Batch) error {
	refuse := func(why string) error {
		return fmt.Errorf("hostclient: consume: batch of topic %q partition %d follows the unanswered batch through offset %d, but library %s %s: send pipelined batches only to a library whose describe() declares \"pipelined\" (docs/abi.md, \"Pipelined batches\")",
			b.Topic, b.Partition, *b.Follows, l.path, why)
	}
	if b.Redrive != nil {
		return fmt.Errorf("hostclient: consume: a redrive batch (dead letters of %q partition %d) cannot be pipelined (Follows set)", b.Redrive.Topic, b.Redrive.Partition)
	}
	if l.abiMajor == 1 && l.abiMinor < 5 {
		return refuse(fmt.Sprintf("is ABI %d.%d and cannot see it", l.abiMajor, l.abiMinor))
	}
	l.pipeMu.Lock()
	defer l.pipeMu.Unlock()
	if l.pipelined == nil {
		js, err := l.Describe(WithContext(ctx))
		if err != nil {
			return fmt.Errorf("hostclient: consume: reading whether library %s declares \"pipelined\": %w", l.path, err)
		}
		var d struct {
			Pipelined bool `json:"pipelined"`
		}
		if err := json.Unmarshal([]byte(js), &d); err != nil {
			return fmt.Errorf("hostclient: consume: library %s: describe() is not a JSON object with a boolean \"pipelined\": %w", l.path, err)
		}
		l.pipelined = &d.Pipelined
	}
	if !*l.pipelined {
		return refuse("does not declare \"pipelined\" in describe()")
	}
	return nil
}

// ConsumeOn is Consume on host worker thread worker.
func (i *Instance) ConsumeOn(worker int, b Batch) error {
	return i.Consume(b, OnWorker(worker))
}

// Metrics calls metrics and returns its JSON.
func (i *Instance) Metrics(opts ...CallOption) (string, error) {
	cc := newCallConfig(opts)
	r, err := i.lib.h.call(opMetrics, cc, func(e *encoder, _ uint64) {
		encodeMetrics(e, i.lib.id, i.handle, cc.OutCap)
	})
	return outText(opMetrics, cc, r, err)
}

// Close calls close. The handle is invalid afterwards whatever it returns.
func (i *Instance) Close(opts ...CallOption) error {
	cc := newCallConfig(opts)
	r, err := i.lib.h.call(opClose, cc, func(e *encoder, _ uint64) {
		encodeClose(e, i.lib.id, i.handle, cc.ErrCap)
	})
	if err != nil {
		return err
	}
	return result(opClose, r)
}

// Logs returns the captured log lines of this instance, including those
// logged during its open.
func (i *Instance) Logs() []LogLine {
	l, _ := i.lib.h.logs.snapshot(func(l LogLine) bool { return l.Ctx == i.ctx })
	return l
}

// Setenv calls setenv(name, value, 1) in the host process, as a host that
// injects secrets after it started does. It runs on a worker like any call:
// make it while no other call is in flight, since setenv in one thread races
// with open reading the environment in another.
func (h *Host) Setenv(name, value string, opts ...CallOption) error {
	return h.setenv(name, &value, opts)
}

// Unsetenv calls unsetenv(name) in the host process; see Setenv.
func (h *Host) Unsetenv(name string, opts ...CallOption) error {
	return h.setenv(name, nil, opts)
}

func (h *Host) setenv(name string, value *string, opts []CallOption) error {
	cc := newCallConfig(opts)
	r, err := h.call(opSetenv, cc, func(e *encoder, _ uint64) {
		encodeSetenv(e, name, value)
	})
	if err != nil {
		return err
	}
	return result(opSetenv, r)
}
