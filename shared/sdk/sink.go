package sdk

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// Sink is what a plugin implements, for its config struct C.
//
// Open receives the decoded config and the instance's Host; when it fails it
// must release what it acquired (Close is not called). Consume writes one
// batch and returns nil only when every record is durably written. Close
// flushes and releases everything. The SDK never calls Consume and Close of
// one instance concurrently, and calls Consume of one instance one at a time
// unless the plugin declares ConcurrentConsume.
type Sink[C any] interface {
	Open(ctx context.Context, cfg *C, host *Host) error
	Consume(ctx context.Context, b *Batch) error
	Close(ctx context.Context) error
}

// MetricsReporter is implemented by sinks with counters of their own. It is
// called concurrently with Consume and must be safe for that.
type MetricsReporter interface {
	Metrics() map[string]any
}

// Plugin is the registration of a sink library.
type Plugin[C any] struct {
	Name string         // e.g. "delta_sink"
	New  func() Sink[C] // a fresh, unopened sink per instance

	// ValidatesPayloads tells the SDK the sink decides itself which
	// payloads it accepts: the Delta sink's decoder rejects bad JSON anyway,
	// and the Redshift sink stores payload bytes without parsing them, so an
	// empty or non-JSON payload of a json batch is not an error for it.
	// Otherwise the SDK runs Batch.CheckPayloads before Consume.
	ValidatesPayloads bool

	// ChecksJSON declares, in describe()'s payload_checks, that the sink
	// refuses every payload of a json batch that is not one JSON value
	// (json.Valid's grammar) itself: rejected with reason encoding (ABI
	// 1.1), or the batch fails FATAL. A runtime may then skip its own check
	// of such batches. Only for sinks that parse every payload in full.
	ChecksJSON bool

	// Metrics declares the numbers of the sink's Metrics() map (Field
	// relative to it) for describe() (ABI 1.2), so an exporter can give
	// them a Prometheus type, unit and name. The SDK declares its own
	// (CommonMetrics). A field left out is exported untyped, as every
	// field of a plugin before ABI 1.2.
	Metrics []Metric

	// ConcurrentConsume lets the host's concurrent consume calls of one
	// instance (batches of different topic-partitions, on different host
	// threads) reach the sink's Consume concurrently, instead of one at a
	// time. The sink then serialises what must be serialised itself, and
	// may write batches that wait for one destination together (one Delta
	// commit, one Redshift load transaction: a group commit). Declared in
	// describe() as "concurrent_consume", so a runtime knows that
	// delivering several batches at once pays. Close still never runs
	// concurrently with Consume.
	ConcurrentConsume bool

	// Redrive (ABI 1.4) declares, in describe() as "redrive", that the sink
	// writes redrive batches (Batch.Redrive: dead letters put back with
	// their original coordinates) exactly once, deduplicating them on the
	// dead-letter offsets or on the original coordinates as its
	// destination allows. Without it the SDK refuses such a batch FATAL.
	Redrive bool

	// Pipelined (ABI 1.5) declares, in describe() as "pipelined", that the
	// sink keeps the order of pipelined batches itself (Batch.Pred): it
	// writes a batch with a predecessor only in the same commit as it, or
	// after it was answered OK. A runtime then sends a partition's next
	// batch before the one before it was answered (docs/abi.md,
	// "Pipelined batches"). Without it the SDK holds such a batch until
	// its predecessor is answered, and so it does for a plugin without
	// ConcurrentConsume, whose calls are serialised: it could not hold a
	// batch and its predecessor at once.
	Pipelined bool
}

// registration is the type-erased plugin the C exports drive.
type registration struct {
	name              string
	schema            *Schema
	validatesPayloads bool
	checksJSON        bool
	concurrent        bool     // Plugin.ConcurrentConsume
	redrive           bool     // Plugin.Redrive
	pipelined         bool     // Plugin.Pipelined
	metrics           []Metric // describe()'s metrics: the SDK's and the sink's
	open              func(ctx context.Context, raw []byte, key string, env Env, host *Host) (erasedSink, Decoded, error)
}

type erasedSink interface {
	Consume(ctx context.Context, b *Batch) error
	Close(ctx context.Context) error
}

var (
	regMu      sync.Mutex
	registered *registration
)

// Register installs the library's one plugin. Call it from an init function
// of the plugin's package main. A second call panics: one library, one sink.
func Register[C any](p Plugin[C]) {
	schema, err := SchemaOf[C]()
	if err != nil {
		panic(fmt.Sprintf("sdk.Register(%s): %v", p.Name, err))
	}
	metrics, err := declaredMetrics(p.Metrics)
	if err != nil {
		panic(fmt.Sprintf("sdk.Register(%s): %v", p.Name, err))
	}
	r := &registration{
		metrics:           metrics,
		name:              p.Name,
		schema:            schema,
		validatesPayloads: p.ValidatesPayloads,
		checksJSON:        p.ChecksJSON,
		concurrent:        p.ConcurrentConsume,
		redrive:           p.Redrive,
		pipelined:         p.Pipelined,
		open: func(ctx context.Context, raw []byte, key string, env Env, host *Host) (erasedSink, Decoded, error) {
			var cfg C
			dec, err := schema.Decode(raw, key, env, &cfg)
			if err != nil {
				return nil, dec, err
			}
			for _, s := range dec.Secrets {
				host.Redact(s)
			}
			for _, w := range dec.Warnings {
				host.Logger.Warn(w)
			}
			s := p.New()
			if err := s.Open(ctx, &cfg, host); err != nil {
				return nil, dec, err
			}
			return s, dec, nil
		},
	}
	regMu.Lock()
	defer regMu.Unlock()
	if registered != nil {
		panic(fmt.Sprintf("sdk.Register(%s): %s is already registered", p.Name, registered.name))
	}
	registered = r
}

func currentRegistration() *registration {
	regMu.Lock()
	defer regMu.Unlock()
	return registered
}

// Host is an instance's view of the runtime: its identity, its logger and
// the goroutines it may start.
type Host struct {
	Key     string // sink key from the definition
	Name    string // sink name from the definition
	Version int64  // definition version
	Logger  *slog.Logger

	inst *instance
}

// Redact adds a value (a password found inside a connection string, say)
// that must never leave the instance in a log line, error or metric.
func (h *Host) Redact(secret string) { h.inst.redact.add(secret) }

// Go starts a background goroutine that lives until the instance closes.
// Its context is cancelled once the sink's own Close has returned, and the
// instance's close then waits for it. A panic in fn is recovered, logged, and makes
// every later Consume fail with FATAL: the instance's state is unknown.
func (h *Host) Go(fn func(ctx context.Context)) {
	inst := h.inst
	inst.wg.Add(1)
	go func() {
		defer inst.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				err := panicError(p)
				inst.poison(err)
				h.Logger.Error("background goroutine panicked", "error", err)
			}
		}()
		fn(inst.ctx)
	}()
}

// Group runs goroutines whose results a call waits for, converting panics
// into errors (an unrecovered panic would crash the host process).
type Group struct {
	wg   sync.WaitGroup
	once sync.Once
	err  error
}

// Go runs fn in a goroutine.
func (g *Group) Go(fn func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = panicError(p)
				}
			}()
			return fn()
		}()
		if err != nil {
			g.once.Do(func() { g.err = err })
		}
	}()
}

// Wait waits for every goroutine and returns the first error.
func (g *Group) Wait() error {
	g.wg.Wait()
	return g.err
}

// PanicError is a recovered panic turned into a FATAL error.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

func panicError(v any) error {
	return Fatal(&PanicError{Value: v, Stack: debug.Stack()})
}
