package sdk

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The functions in this file are the ABI operations in plain Go; the cgo
// package shared/sdk/cabi only converts C types and calls them.

// Definition is the sink definition JSON that open receives.
type Definition struct {
	Key          string          `json:"key"`
	Name         string          `json:"name"`
	Version      int64           `json:"version"`
	PluginConfig json.RawMessage `json:"plugin_config"`
}

// LogLevelEnv sets the lowest level forwarded to the host (debug, info,
// warn, error); info by default.
const LogLevelEnv = "PICOMQ_SINK_LOG_LEVEL"

type instance struct {
	handle uint64
	reg    *registration
	host   *Host
	sink   erasedSink
	logs   *logSink
	redact *redactor

	ctx    context.Context // the instance's life: Open, Close, Host.Go goroutines
	cancel context.CancelFunc
	// callCtx is what Consume runs under. Close cancels it before waiting
	// (on mu) for a Consume in flight to return, so a call stuck on a lock
	// or a dead peer cannot make Close hang. The cancelled call returns
	// RETRY, or OK if its write completed anyway.
	callCtx    context.Context
	callCancel context.CancelFunc
	wg         sync.WaitGroup // goroutines started with Host.Go

	// mu serialises Close with every Consume, and Consumes with each
	// other unless the plugin declared ConcurrentConsume (then they hold
	// it shared).
	mu     sync.RWMutex
	closed bool

	poisoned atomic.Pointer[error]

	seq sequencer // pipelined batches (ABI 1.5): Batch.Self and Batch.Pred

	batches, records, bytes   atomic.Uint64
	rejected                  atomic.Uint64 // records rejected (ABI 1.1)
	skipped                   atomic.Uint64 // records the destination already had (Batch.Skipped)
	failures, retries, fatals atomic.Uint64
	lastErrorUnixNano         atomic.Int64
	lastError                 atomic.Pointer[string]
}

func (in *instance) poison(err error) { in.poisoned.CompareAndSwap(nil, &err) }

// Instances are found by handle. Handles carry a random per-library salt in
// the high bits so a handle passed to the wrong library is refused rather
// than mistaken for one of its own instances.
var (
	instMu     sync.RWMutex
	instances  = map[uint64]*instance{}
	nextHandle atomic.Uint64
	handleSalt = func() uint64 {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return uint64(binary.LittleEndian.Uint32(b[:])|1) << 32
	}()
)

func lookup(h uint64) *instance {
	instMu.RLock()
	defer instMu.RUnlock()
	return instances[h]
}

var errUnknownInstance = Fatalf("unknown instance (closed or never opened)")

// Open decodes the sink definition, applies environment overrides, and opens
// a new instance of the registered sink. log may be nil: lines then go to
// stderr. It reads the environment with os.Environ; OpenEnv takes it from
// the caller.
func Open(definition []byte, log LogFunc) (uint64, error) {
	return OpenEnv(definition, log, os.Environ())
}

// OpenEnv is Open reading the environment overrides and LogLevelEnv from
// environ ("NAME=value" entries) rather than os.Environ. In a c-shared
// library the Go runtime copies the environment once, when the library is
// loaded, and never sees a setenv(3) the host makes after that; the C shim
// therefore passes the C library's environ as it is at open.
func OpenEnv(definition []byte, log LogFunc, environ []string) (uint64, error) {
	reg := currentRegistration()
	if reg == nil {
		return 0, Fatalf("no sink is registered in this library")
	}
	var def Definition
	if err := json.Unmarshal(definition, &def); err != nil {
		return 0, BadConfigf("sink definition is not valid JSON: %v", err)
	}
	if def.Key == "" {
		return 0, BadConfigf("sink definition: \"key\" is required")
	}
	in := &instance{reg: reg, redact: &redactor{}}
	if log == nil {
		log = stderrLog(reg.name, def.Key)
	}
	env := EnvFrom(environ)
	in.logs = &logSink{out: log, minLevel: slog.LevelInfo, redact: in.redact}
	if lv, ok := env.Lookup(LogLevelEnv); ok {
		if l, ok := ParseLevel(lv); ok {
			in.logs.minLevel = l
		}
	}
	in.ctx, in.cancel = context.WithCancel(context.Background())
	in.callCtx, in.callCancel = context.WithCancel(in.ctx)
	in.host = &Host{Key: def.Key, Name: def.Name, Version: def.Version, Logger: newLogger(in.logs), inst: in}

	sink, err := safeCall(func() (erasedSink, error) {
		s, _, err := reg.open(in.ctx, def.PluginConfig, def.Key, env, in.host)
		return s, err
	})
	if err != nil {
		in.shutdown()
		return 0, in.scrub(err)
	}
	in.sink = sink
	in.handle = handleSalt | nextHandle.Add(1)
	instMu.Lock()
	instances[in.handle] = in
	instMu.Unlock()
	return in.handle, nil
}

// Consume hands one batch to the instance's sink.
func Consume(h uint64, b *Batch) error {
	in := lookup(h)
	if in == nil {
		return errUnknownInstance
	}
	// RangeLast 0 is unknown (ABI 1.4 hosts never set it): the batch ends
	// at its last record.
	if b.RangeLast == 0 && b.Redrive == nil {
		b.RangeLast = b.LastOffset()
	}
	// Self is registered before the batch waits for anything (its
	// predecessor, the instance's lock), so that a batch following it
	// finds it, and answered with what this call returns.
	self := in.seq.start(b)
	ok := false
	defer func() { in.seq.finish(b, self, ok) }()
	err := in.consumeInOrder(b)
	ok = err == nil
	return err
}

// consumeInOrder resolves the batch's predecessor (pipelined.go), then
// consumes it under the instance's lock and accounts for the answer.
func (in *instance) consumeInOrder(b *Batch) error {
	err := in.sequence(b)
	if err == nil {
		err = in.consumeLocked(b)
	}
	if errors.Is(err, errUnknownInstance) {
		return err
	}
	if err != nil {
		b.ForgetRejections()
		b.skipped = 0
		in.failures.Add(1)
		if StatusOf(err) == StatusFatal {
			in.fatals.Add(1)
		} else {
			in.retries.Add(1)
		}
		in.lastErrorUnixNano.Store(time.Now().UnixNano())
		err = in.scrub(err)
		msg := err.Error()
		in.lastError.Store(&msg)
		return err
	}
	rej := 0
	if b.rejects != nil {
		// Rejection messages leave the instance like errors: scrubbed.
		for i, r := range b.rejects.byIndex {
			if r.Err == nil {
				r.Err = fmt.Errorf("record at offset %d rejected (%s)", b.Records[i].Offset, r.Reason)
			}
			r.Err = in.scrub(r.Err)
			b.rejects.byIndex[i] = r
		}
		rej = len(b.rejects.byIndex)
		in.rejected.Add(uint64(rej))
	}
	in.batches.Add(1)
	// Batch.Skipped promises no rejected record among the skipped ones;
	// a sink that breaks that does not make the written count wrap.
	skipped := min(b.skipped, len(b.Records)-rej)
	in.skipped.Add(uint64(skipped))
	in.records.Add(uint64(len(b.Records) - rej - skipped))
	in.bytes.Add(uint64(b.PayloadBytes()))
	return nil
}

// sequence sets b.Pred for a pipelined batch, or answers it RETRY when its
// predecessor was not written. It runs before the instance's lock: a
// follower waiting here must not keep its predecessor out of the sink.
func (in *instance) sequence(b *Batch) error {
	if err := b.checkSequence(); err != nil || b.Follows == nil {
		return err
	}
	pred, err := in.seq.predecessor(in.callCtx, b)
	if err != nil || pred == nil {
		return err
	}
	if !in.reg.pipelined || !in.reg.concurrent {
		// The sink cannot keep the order itself (it did not declare
		// Pipelined), or cannot hold both batches at once (its calls are
		// serialised): it gets b once the predecessor was written.
		return pred.Wait(in.callCtx)
	}
	b.Pred = pred
	return nil
}

func (in *instance) consumeLocked(b *Batch) error {
	if in.reg.concurrent {
		in.mu.RLock()
		defer in.mu.RUnlock()
	} else {
		in.mu.Lock()
		defer in.mu.Unlock()
	}
	if in.closed {
		return errUnknownInstance
	}
	return in.consume(b)
}

func (in *instance) consume(b *Batch) error {
	if p := in.poisoned.Load(); p != nil {
		return Fatalf("instance is unusable after an earlier failure: %w", *p)
	}
	if err := b.checkRedrive(in.reg.redrive); err != nil {
		return err
	}
	if !in.reg.validatesPayloads {
		if err := b.CheckPayloads(); err != nil {
			return err
		}
	}
	_, err := safeCall(func() (struct{}, error) {
		return struct{}{}, in.sink.Consume(in.callCtx, b)
	})
	var p *PanicError
	if errors.As(err, &p) {
		// The sink's buffers may be half-written: never use it again.
		in.poison(err)
		return err
	}
	if err != nil && in.callCtx.Err() != nil && errors.Is(err, context.Canceled) {
		// Close cancelled this call: whatever the sink made of the
		// cancellation, the batch was not refused for good, and the
		// header promises RETRY.
		return Retry(fmt.Errorf("consume cancelled by close: %w", err))
	}
	return err
}

// Metrics returns the JSON snapshot of an instance's counters.
func Metrics(h uint64) ([]byte, error) {
	in := lookup(h)
	if in == nil {
		return nil, errUnknownInstance
	}
	m := map[string]any{
		"plugin":          in.reg.name,
		"key":             in.host.Key,
		"batches":         in.batches.Load(),
		"records":         in.records.Load(),
		"rejected":        in.rejected.Load(),
		"skipped":         in.skipped.Load(),
		"bytes":           in.bytes.Load(),
		"failures":        in.failures.Load(),
		"retry_failures":  in.retries.Load(),
		"fatal_failures":  in.fatals.Load(),
		"last_error_time": nil,
		"last_error":      nil,
	}
	if ns := in.lastErrorUnixNano.Load(); ns != 0 {
		m["last_error_time"] = time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
	}
	if msg := in.lastError.Load(); msg != nil {
		m["last_error"] = *msg
	}
	if r, ok := in.sink.(MetricsReporter); ok {
		extra, err := safeCall(func() (map[string]any, error) { return r.Metrics(), nil })
		if err != nil {
			return nil, in.scrub(err)
		}
		m["sink"] = extra
	}
	if r, ok := in.sink.(CommitReporter); ok {
		cs, err := safeCall(func() ([]Commit, error) { return r.LastCommits(), nil })
		if err != nil {
			return nil, in.scrub(err)
		}
		if cs == nil {
			cs = []Commit{}
		}
		m["last_commits"] = cs
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, Fatalf("metrics: %v", err)
	}
	return []byte(in.redact.apply(string(out))), nil
}

// Close flushes and closes an instance. The handle is invalid afterwards,
// even when Close returns an error. A Consume in flight is cancelled and
// Close waits for it to return (it holds mu for the whole call) before the
// sink's Close runs, so nothing of the instance is released under it.
func Close(h uint64) error {
	instMu.Lock()
	in := instances[h]
	delete(instances, h)
	instMu.Unlock()
	if in == nil {
		return errUnknownInstance
	}
	in.callCancel()
	in.mu.Lock()
	defer in.mu.Unlock()
	in.closed = true
	_, err := safeCall(func() (struct{}, error) { return struct{}{}, in.sink.Close(in.ctx) })
	in.shutdown()
	return in.scrub(err)
}

// shutdown stops the instance's goroutines and then its logging: nothing is
// logged after it returns.
func (in *instance) shutdown() {
	in.cancel()
	in.wg.Wait()
	in.logs.close()
}

// scrub removes secrets from an error's text while keeping its status.
func (in *instance) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := in.redact.apply(msg)
	if clean == msg {
		return err
	}
	return &Error{Status: StatusOf(err), Err: errors.New(clean)}
}

// safeCall runs fn, turning a panic into a FATAL error.
func safeCall[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return fn()
}

func stderrLog(plugin, key string) LogFunc {
	var mu sync.Mutex
	return func(level slog.Level, line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stderr, "%s %s %s[%s] %s\n", time.Now().UTC().Format(time.RFC3339Nano), level, plugin, key, line)
	}
}
