package child

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/picomq/heavy-sinks/shared/hostdriver"
)

// Instance is one open sink instance of a Process. Its calls are not meant
// to overlap: a sink consumer hands it one batch at a time.
type Instance struct {
	p      *Process
	config string
	log    *slog.Logger

	mu   sync.Mutex
	h    *hostdriver.Host // the child inst lives in
	inst *hostdriver.Instance
	gen  int
}

// Open opens an instance with config, the JSON of
// definition.Definition.OpenConfig. Opening at start means a refused
// configuration stops the runtime before it consumes anything. log
// receives the instance's plugin lines.
func (p *Process) Open(ctx context.Context, config string, log *slog.Logger) (*Instance, error) {
	i := &Instance{p: p, config: config, log: log}
	if err := i.ensure(ctx); err != nil {
		return nil, err
	}
	return i, nil
}

// ensure opens the instance in the current child, again after a restart.
func (i *Instance) ensure(ctx context.Context) error {
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
	inst, err := lib.Open(i.config, hostdriver.WithContext(ctx))
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
	return nil
}

// Consume hands b to the plugin: nil for OK, with the records it rejected
// when b.AcceptRejections is set (ABI 1.1), a *hostdriver.StatusError for
// RETRY, FATAL and the host's own codes, and an error matching ErrExited
// when the child died (before or during the call).
func (i *Instance) Consume(ctx context.Context, b hostdriver.Batch) ([]hostdriver.Rejection, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if err := i.ensure(ctx); err != nil {
		return nil, err
	}
	rej, err := i.inst.ConsumeResult(b, hostdriver.WithContext(ctx))
	return rej, exitedFrom(i.h, err)
}

// Metrics returns the instance's metrics() JSON.
func (i *Instance) Metrics(ctx context.Context) (string, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if err := i.ensure(ctx); err != nil {
		return "", err
	}
	s, err := i.inst.Metrics(hostdriver.WithContext(ctx))
	return s, exitedFrom(i.h, err)
}

// Close closes the instance in the child, if the child still runs it.
func (i *Instance) Close() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.inst == nil {
		return nil
	}
	inst := i.inst
	i.inst = nil
	i.p.mu.Lock()
	same := i.gen == i.p.gen && i.p.h != nil && i.p.h.Err() == nil
	i.p.mu.Unlock()
	if !same {
		return nil // the child that held it is gone, and the instance with it
	}
	err := inst.Close()
	i.p.loggers.Delete(inst.Ctx())
	return exitedFrom(i.h, err)
}
