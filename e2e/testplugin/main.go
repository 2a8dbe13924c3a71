// Command testplugin is a sink plugin for the ABI tests, built as a c-shared
// library like the real sinks. It records every batch it receives, one JSON
// line per batch, to a file, and can be told to fail, panic or stall, so the
// e2e tests can check what crossed the ABI and how failures come back. It is
// never shipped.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/picomq/heavy-sinks/shared/sdk"
	_ "github.com/picomq/heavy-sinks/shared/sdk/cabi"
)

// Config is the test plugin's plugin_config.
type Config struct {
	RecordPath string `config:"record_path,required" doc:"File that receives one JSON line per batch"`
	Token      string `config:"token,secret" doc:"A secret; logged on purpose at open so tests can check redaction"`
	FailMode   string `config:"fail_mode" doc:"retry, fatal, panic, panic_goroutine, panic_background, panic_open, block or empty"`
	FailTopic  string `config:"fail_topic" doc:"Only batches of this topic fail; empty means all"`
	// FailAttempts lets a runtime's retries succeed: fail_mode retry with
	// fail_attempts 2 fails attempts 1 and 2 of a batch, and 3 writes it.
	FailAttempts int           `config:"fail_attempts" doc:"Fail only attempts 1 to N of a batch; 0 fails every attempt"`
	Delay        time.Duration `config:"delay" default:"0s" doc:"Sleep per consume"`
	OpenDelay    time.Duration `config:"open_delay" default:"0s" doc:"Sleep in open"`
	// DownFile makes a destination that is down at start, for as long as
	// a test wants: the runtime must open again until it answers.
	DownFile string `config:"down_file" doc:"While this file exists, open answers RETRY; BAD_CONFIG when it holds \"refuse\""`
	MaxBatch int    `config:"max_batch" default:"100000" doc:"Batches larger than this fail as FATAL"`
	Verbose  bool   `config:"verbose" doc:"Log every batch at info"`
	// RejectPrefix makes records whose payload starts with it records that
	// can never be written (ABI 1.1): rejected when the host accepts
	// rejections, otherwise the batch fails FATAL as with ABI 1.0.
	RejectPrefix string `config:"reject_prefix" doc:"Reject records whose payload starts with this (ABI 1.1)"`
	// LogLines makes a plugin that logs a lot from goroutines whose
	// stacks grow and shrink: the Go runtime copies a stack it shrinks
	// and checks every pointer in it, so a host's log_ctx held as a Go
	// pointer fails there when it is not an address (the C host passes
	// small integers).
	LogLines int `config:"log_lines" doc:"Per consume, log this many lines from 4 goroutines, each after deepening its stack"`
	// GrowStack makes the Go runtime copy the consume goroutine's stack
	// while a record's byte slices are on it: a copy checks every
	// pointer, so a slice of the host's that points at no address fails.
	GrowStack bool `config:"grow_stack" doc:"While record i is in hand, recurse (i+1) * 64 KiB deep"`
}

func main() {}

func init() {
	// A library whose loading never ends, for the runtime's tests that a
	// stuck load does not hold the shutdown: Go runs this before any export
	// of the library answers, so picomq_sink_plugin_init waits for it.
	if d, err := time.ParseDuration(os.Getenv("PICOMQ_TEST_PLUGIN_LOAD_DELAY")); err == nil {
		time.Sleep(d)
	}
	// A plugin that runs concurrent consume calls of one instance
	// together, for the runtime's tests of batches in flight.
	concurrent := os.Getenv("PICOMQ_TEST_PLUGIN_CONCURRENT") == "1"
	// A plugin that declares pipelined (ABI 1.5): it sees Batch.Pred
	// (with concurrent consume) and keeps the rule by waiting for the
	// predecessor's answer before it writes.
	pipelined := os.Getenv("PICOMQ_TEST_PLUGIN_PIPELINED") == "1"
	sdk.Register(sdk.Plugin[Config]{Name: "test_sink", New: func() sdk.Sink[Config] { return &sink{} },
		ConcurrentConsume: concurrent, Pipelined: pipelined})
}

type sink struct {
	cfg    Config
	host   *sdk.Host
	file   *os.File
	writes atomic.Int64
	// running counts the consume calls in the sink now: more than one
	// only with PICOMQ_TEST_PLUGIN_CONCURRENT=1.
	running atomic.Int64
}

// recorded is one line of the record file.
type recorded struct {
	Topic     string `json:"topic"`
	Partition uint32 `json:"partition"`
	Schema    string `json:"schema"`
	Attempt   uint32 `json:"attempt"`
	// Running is how many consume calls of the instance ran when this
	// one began, itself included.
	Running int64            `json:"running"`
	Records []recordedRecord `json:"records"`
	// ValueSchema is the batch's value schema (ABI 1.3); absent: none.
	ValueSchema *string `json:"value_schema,omitempty"`
	// RangeLast and Follows are the batch's (ABI 1.5), Pred the RangeLast
	// of the predecessor the SDK handed the sink (absent: none).
	RangeLast uint64  `json:"range_last"`
	Follows   *uint64 `json:"follows,omitempty"`
	Pred      *uint64 `json:"pred,omitempty"`
}

type recordedRecord struct {
	Offset    uint64      `json:"offset"`
	Timestamp int64       `json:"timestamp"`
	Key       *string     `json:"key"` // base64, null when absent
	Headers   [][2]string `json:"headers"`
	Payload   string      `json:"payload"` // base64
}

func (s *sink) Open(ctx context.Context, cfg *Config, host *sdk.Host) error {
	if cfg.FailMode == "panic_open" {
		panic("test plugin: panic in open")
	}
	if cfg.MaxBatch <= 0 {
		return sdk.BadConfigf("plugin_config key %q must be above 0", "max_batch")
	}
	// The record file exists before the delay: a test sees the open in
	// flight.
	f, err := os.OpenFile(cfg.RecordPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return sdk.BadConfigf("plugin_config key %q: %v", "record_path", err)
	}
	time.Sleep(cfg.OpenDelay)
	if cfg.DownFile != "" {
		if b, err := os.ReadFile(cfg.DownFile); err == nil {
			f.Close()
			if string(b) == "refuse" {
				return sdk.BadConfigf("test plugin: %s says refuse: authentication failed", cfg.DownFile)
			}
			return sdk.Retryf("test plugin: %s exists: connection refused", cfg.DownFile)
		}
	}
	s.cfg, s.host, s.file = *cfg, host, f
	host.Logger.Info("test sink opened", "record_path", cfg.RecordPath, "token", cfg.Token)
	return nil
}

func (s *sink) Consume(ctx context.Context, b *sdk.Batch) error {
	running := s.running.Add(1)
	defer s.running.Add(-1)
	if s.cfg.Delay > 0 {
		// A stalled destination: the sleep ignores close's cancel.
		s.host.Logger.Info("consume delayed", "topic", b.Topic, "records", len(b.Records), "delay", s.cfg.Delay.String())
		time.Sleep(s.cfg.Delay)
	}
	if (s.cfg.FailTopic == "" || s.cfg.FailTopic == b.Topic) &&
		(s.cfg.FailAttempts <= 0 || int(b.Attempt) <= s.cfg.FailAttempts) {
		switch s.cfg.FailMode {
		case "retry":
			return sdk.Retryf("test plugin: asked to fail %s with RETRY (token %s)", b, s.cfg.Token)
		case "fatal":
			return sdk.Fatalf("test plugin: asked to fail %s with FATAL", b)
		case "panic":
			panic("test plugin: panic in consume")
		case "panic_goroutine":
			var g sdk.Group
			g.Go(func() error { panic("test plugin: panic in a goroutine") })
			return g.Wait()
		case "block":
			// Wait for close to cancel the call, then take a while to
			// give up and leave a mark: close must wait for this
			// return. Marked FATAL on purpose: the SDK reports RETRY
			// for a call close cancelled, whatever the sink says.
			s.host.Logger.Info("consume blocked", "topic", b.Topic)
			<-ctx.Done()
			time.Sleep(300 * time.Millisecond)
			if err := os.WriteFile(s.cfg.RecordPath+".cancelled", []byte(b.Topic), 0o644); err != nil {
				return sdk.Retry(err)
			}
			return sdk.Fatalf("test plugin: blocked consume gave up: %w", ctx.Err())
		case "panic_background":
			done := make(chan struct{})
			s.host.Go(func(context.Context) { defer close(done); panic("test plugin: panic in a background goroutine") })
			<-done
			return nil
		}
	}
	if s.cfg.LogLines > 0 {
		s.logMany(b.Topic)
	}
	if b.Pred != nil {
		// The pipelined rule: written only after the batch before it.
		if err := b.Pred.Wait(ctx); err != nil {
			return err
		}
	}
	if len(b.Records) > s.cfg.MaxBatch {
		return sdk.Fatalf("batch of %d records exceeds max_batch %d", len(b.Records), s.cfg.MaxBatch)
	}
	if p := s.cfg.RejectPrefix; p != "" {
		for i, r := range b.Records {
			if strings.HasPrefix(string(r.Payload), p) {
				err := fmt.Errorf("test plugin: record at topic %q offset %d starts with %q", b.Topic, r.Offset, p)
				if !b.Reject(i, sdk.RejectValue, err) {
					return sdk.Fatal(err)
				}
			}
		}
	}
	line := recorded{Topic: b.Topic, Partition: b.Partition, Schema: b.Schema, Attempt: b.Attempt, Running: running, Records: []recordedRecord{},
		RangeLast: b.RangeLast, Follows: b.Follows}
	if b.Pred != nil {
		line.Pred = &b.Pred.RangeLast
	}
	if b.ValueSchema != nil {
		vs := string(b.ValueSchema)
		line.ValueSchema = &vs
	}
	for i, r := range b.Records {
		if b.Rejected(i) {
			continue
		}
		if s.cfg.GrowStack {
			_ = deepen(64 * (i + 1))
		}
		rr := recordedRecord{Offset: r.Offset, Timestamp: r.Timestamp, Payload: base64.StdEncoding.EncodeToString(r.Payload), Headers: [][2]string{}}
		if r.Key != nil {
			k := base64.StdEncoding.EncodeToString(r.Key)
			rr.Key = &k
		}
		for _, h := range r.Headers {
			rr.Headers = append(rr.Headers, [2]string{string(h.Key), string(h.Value)})
		}
		line.Records = append(line.Records, rr)
	}
	data, err := json.Marshal(line)
	if err != nil {
		return sdk.Fatal(err)
	}
	if _, err := s.file.Write(append(data, '\n')); err != nil {
		return sdk.Retry(fmt.Errorf("write record file: %w", err))
	}
	s.writes.Add(1)
	if s.cfg.Verbose {
		s.host.Logger.Info("batch recorded", "topic", b.Topic, "records", len(b.Records), "last_offset", b.LastOffset())
	}
	return nil
}

// logMany logs cfg.LogLines lines from 4 goroutines. Before each line a
// goroutine recurses deep enough to grow its stack to 64 KiB and returns,
// so the collector (the tests run the host with a tiny GOGC) finds a stack
// worth shrinking while the line goes out. The consume goroutine logs too.
func (s *sink) logMany(topic string) {
	const goroutines = 4
	// Worker w logs lines w, w+5, w+10, ...; worker 4 is this goroutine.
	work := func(w int) {
		for i := w; i < s.cfg.LogLines; i += goroutines + 1 {
			_ = deepen(64)
			garbage.Store(make([]byte, 4096)) // work for the collector
			s.host.Logger.Info("log line", "topic", topic, "line", i)
		}
	}
	var g sdk.Group
	for w := range goroutines {
		g.Go(func() error { work(w); return nil })
	}
	work(goroutines)
	_ = g.Wait()
}

var garbage atomic.Value

// deepen uses about n KiB of stack.
//
//go:noinline
func deepen(n int) byte {
	var frame [1024]byte
	frame[n%len(frame)] = byte(n)
	if n == 0 {
		return frame[0]
	}
	return deepen(n-1) + frame[(n*7)%len(frame)]
}

func (s *sink) Metrics() map[string]any {
	return map[string]any{"lines_written": s.writes.Load()}
}

func (s *sink) Close(ctx context.Context) error {
	s.host.Logger.Info("test sink closing", "lines_written", s.writes.Load())
	return errors.Join(s.file.Sync(), s.file.Close())
}
