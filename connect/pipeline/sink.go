package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	decoding "github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// Deliverer hands one batch to a plugin's consume(): nil for OK (with the
// records the plugin rejected, ABI 1.1, when b.AcceptRejections is set), a
// *hostclient.StatusError for any other result, an error matching
// child.ErrExited when the plugin's process died.
type Deliverer interface {
	Consume(ctx context.Context, b hostclient.Batch) ([]hostclient.Rejection, error)
}

// PayloadChecker is implemented by a Deliverer whose plugin checks the
// payloads of some schemas itself as strictly as the runtime would
// (describe()'s payload_checks: a child.Instance). The runtime then skips
// its own check of those batches: the Delta sink parses every JSON payload
// anyway, and checking it twice was a quarter of the runtime's CPU.
type PayloadChecker interface {
	ChecksPayloads(schema string) bool
}

// ConcurrentConsumer is implemented by a Deliverer whose plugin says
// whether concurrent consume calls of one instance run together
// (describe()'s concurrent_consume: a child.Instance, once open). One that
// does not serialises them: max_in_flight > 1 is still correct with it, but
// the batches wait for each other in the plugin.
type ConcurrentConsumer interface {
	ConcurrentConsume() bool
}

// Pipeliner is implemented by a Deliverer whose plugin says whether it
// keeps the order of pipelined batches itself (describe()'s pipelined, ABI
// 1.5: a child.Instance, once open): only then does a block with
// max_in_flight_per_partition above 1 send a partition's next batch
// (hostclient.Batch.Follows) before the one before it was answered.
type Pipeliner interface {
	Pipelined() bool
}

// State is where a sink is in its life.
type State string

// Sink states. A sink is in StateError once any of its consumers stopped
// on a failure; its other consumers keep running.
const (
	StateStarting State = "starting"
	StateRunning  State = "running"
	StateError    State = "error"
	StateStopped  State = "stopped"
)

// Config is what the runtime gives every sink. Zero fields take the
// defaults.
type Config struct {
	// Brokers are the seed brokers, unless a block's bootstrap.servers
	// property names others.
	Brokers []string
	Logger  *slog.Logger // default slog.Default()
	// Observer is told about every delivery attempt; the metrics hook.
	Observer Observer
	// Backoff is the wait after failed attempt n (1..4) before attempt
	// n+1; default Backoff.
	Backoff func(attempt int) time.Duration
	// OpenBackoff is the wait after failed open attempt n; default
	// OpenBackoff.
	OpenBackoff func(attempt int) time.Duration
	// ShutdownTimeout bounds the flush and the final commit on shutdown;
	// default 30s.
	ShutdownTimeout time.Duration
	// ClientOpts are added to every consumer's kgo options, after the
	// definition's: for tests, or settings no property maps.
	ClientOpts []kgo.Opt
	// LagRefresh is how often each consumer lists its topics' end offsets
	// for the lag it reports (fetches update it in between); default 5s.
	LagRefresh time.Duration
	// Budget counts (and, with a limit, caps) the bytes buffered by
	// every sink sharing it; default one of this sink's own, uncapped.
	Budget *Budget
	// Decoders are the decoders of the blocks whose schema is binary
	// (avro, proto, flatbuffer), by block Index (connect/decode/build);
	// Run refuses a binary block without one.
	Decoders map[int]decoding.Decoder
	// DecodeBackoff is the wait after failed attempt n to decode a batch
	// whose decoder failed transiently; default DecodeBackoff.
	DecodeBackoff func(attempt int) time.Duration
}

// MaxAttempts is how many times one batch is delivered before its
// consumer stops: the spec's five.
const MaxAttempts = 5

// Backoff waits from 200 ms after the first failure to 5 s after the
// fourth, growing by the same factor each time (about 2.9): 200 ms,
// 585 ms, 1.71 s, 5 s.
var Backoff = backoff.Between(200*time.Millisecond, 5*time.Second, MaxAttempts-1)

// Sink runs one definition: a consumer per [[topics]] block, all handing
// batches to one plugin instance.
type Sink struct {
	def *definition.Definition
	out Deliverer
	cfg Config
	log *slog.Logger

	flying atomic.Int64 // batches in flight, every block's
	// Pipelined batches (max_in_flight_per_partition): handed to
	// consume() with Follows set, and followers that were not delivered or
	// were voided, their records sent again.
	followed, unsentN atomic.Int64

	mu      sync.Mutex
	state   State
	lastErr error
	parts   map[tp]*PartitionStatus // see status.go
}

// New returns a Sink for def that delivers to out.
func New(def *definition.Definition, out Deliverer, cfg Config) *Sink {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Backoff == nil {
		cfg.Backoff = Backoff
	}
	if cfg.OpenBackoff == nil {
		cfg.OpenBackoff = OpenBackoff
	}
	if cfg.DecodeBackoff == nil {
		cfg.DecodeBackoff = DecodeBackoff
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.LagRefresh <= 0 {
		cfg.LagRefresh = 5 * time.Second
	}
	if cfg.Budget == nil {
		cfg.Budget = NewBudget(0)
	}
	return &Sink{def: def, out: out, cfg: cfg, log: cfg.Logger.With("sink_key", def.Key), state: StateStarting}
}

// Key returns the sink's key.
func (s *Sink) Key() string { return s.def.Key }

// InFlight returns how many batches of the sink are being delivered now:
// at most one per block with max_in_flight = 1.
func (s *Sink) InFlight() int { return int(s.flying.Load()) }

// Pipelined returns how many batches were handed to consume() while the
// batch before them of their partition was unanswered (Follows set), and
// how many followers were not delivered or not kept (their records went
// again): the second against the first is the work pipelining wasted.
func (s *Sink) Pipelined() (followed, unsent int64) {
	return s.followed.Load(), s.unsentN.Load()
}

// State returns the sink's state and the error that put it there.
func (s *Sink) State() (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.lastErr
}

func (s *Sink) setState(st State, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateError && st != StateError {
		return // an error stays visible until the sink is restarted
	}
	s.state, s.lastErr = st, err
}

// Run opens the sink's Deliverer when it is an Opener (the state stays
// StateStarting until it is open), then consumes until ctx is done, then
// flushes, commits once and returns nil; or until every consumer has
// stopped, returning their errors. A consumer that fails stops alone; Run
// returns once all have stopped. When ctx ends before the Deliverer is
// open, Run returns nil having consumed nothing; when the open is refused,
// a *RefusedError.
func (s *Sink) Run(ctx context.Context) error {
	s.warnFetchWait()
	for _, t := range s.def.Topics {
		if t.Schema.Binary() && s.cfg.Decoders[t.Index] == nil {
			// A programming error of the caller, refused as a bad
			// definition is: binary payloads must never reach the plugin.
			err := &RefusedError{Err: fmt.Errorf("%s: [[topics]] block %d: schema %q: no decoder was built for it", s.def.File, t.Index, t.Schema)}
			s.setState(StateError, err)
			return err
		}
	}
	if o, ok := s.out.(Opener); ok {
		err := s.open(ctx, o)
		if ctx.Err() != nil {
			// Also when the open succeeded as the signal came: nothing
			// was fetched, so there is nothing to flush.
			s.log.Info("sink stopped before it opened", "event", "sink_open_cancelled")
			s.setState(StateStopped, nil)
			return nil
		}
		if err != nil {
			s.setState(StateError, err)
			return err
		}
	}
	s.warnSerialised()
	consumers := make([]*consumer, len(s.def.Topics))
	for i, t := range s.def.Topics {
		opts, err := clientOpts(s.cfg.Brokers, t)
		if err != nil {
			s.setState(StateError, err)
			return err
		}
		consumers[i] = newConsumer(s, t, append(opts, s.cfg.ClientOpts...))
	}
	s.setState(StateRunning, nil)
	errs := make([]error, len(consumers))
	var wg sync.WaitGroup
	for i, c := range consumers {
		wg.Go(func() {
			if err := c.run(ctx); err != nil {
				errs[i] = err
				s.setState(StateError, err)
				s.log.Error("consumer stopped on a failure", "event", "consumer_failed", "block", c.t.Index, "group", c.t.ConsumerGroup, "err", err)
			}
		})
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		s.setState(StateStopped, nil)
	}
	return err
}
