package pipeline_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// What the runtime does when the plugin's host dies, and when opening the
// plugin fails, with the deaths and answers scripted: the cases
// TestHostKilledResumes and cmd/picomq-connect's tests reach only by
// chance or through a built host.

// The host dies at three chosen calls, once after it wrote the batch (its
// OK lost): the consumer rewinds to the committed offsets each time, the
// batch in flight comes back as attempt 2 and the instance is opened again
// first; nothing is lost and the one written batch is the only duplicate.
func TestHostDiesResumes(t *testing.T) {
	const total = 300
	deaths := map[int]fakeplugin.Result{5: fakeplugin.Exit(), 13: {Exit: true, Written: true}, 22: fakeplugin.Exit()}
	p := &fakeplugin.Plugin{Decide: func(_ hostclient.Batch, n int) fakeplugin.Result { return deaths[n] }}
	kf := cluster(t, "a")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 10\npoll_interval = \"50ms\"\n", fake(p))
	produce(t, kf, "a", jsonPayloads(0, total)...)
	h.start()
	poll.Until(t, 60*time.Second, "everything committed", func() bool { return committed(t, kf, group, "a")["a"] == total })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	dups := duplicates(t, h.lines(), "a", total)
	written := 0 // the batch written before its death: delivered again whole
	for _, c := range p.Calls() {
		if c.Result.Written {
			written = len(c.Batch.Records)
		}
	}
	if dups != written || written == 0 {
		t.Errorf("%d duplicate records, want the %d of the batch written before its death", dups, written)
	}
	var outcomes []string
	for i, c := range p.Calls() {
		if c.Result.Exit {
			if !errors.Is(c.Err, child.ErrExited) {
				t.Errorf("call %d: %v does not match child.ErrExited", i+1, c.Err)
			}
			next := p.Calls()[i+1].Batch
			if next.Records[0].Offset != c.Batch.Records[0].Offset || next.Attempt != c.Batch.Attempt+1 {
				t.Errorf("after the death at call %d (offset %d attempt %d) came offset %d attempt %d", i+1,
					c.Batch.Records[0].Offset, c.Batch.Attempt, next.Records[0].Offset, next.Attempt)
			}
		}
	}
	for _, o := range h.seen.outcomes() {
		if strings.HasSuffix(o, ":exited") {
			outcomes = append(outcomes, o)
		}
	}
	if len(outcomes) != 3 {
		t.Errorf("observed deaths %v, want 3", outcomes)
	}
	// One open by Run, one reopen after each death.
	if got := p.Opens(); got != 4 {
		t.Errorf("%d opens, want 4", got)
	}
	if !h.logged("event=rewind") {
		t.Error("no rewind logged")
	}
}

// A batch that kills its host five times stops the consumer, as five
// RETRYs do: the deaths count as attempts across the rewinds.
func TestFifthDeathStops(t *testing.T) {
	p := &fakeplugin.Plugin{Decide: func(hostclient.Batch, int) fakeplugin.Result { return fakeplugin.Exit() }}
	kf, h := oneBatch(t, fake(p), 2)
	h.start()
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Attempts != 5 || se.Outcome != pipeline.Exited || se.Offset != 0 || !errors.Is(err, child.ErrExited) {
		t.Fatalf("Run = %v, want a stop after 5 deaths", err)
	}
	var attempts []uint32
	for _, c := range p.Calls() {
		attempts = append(attempts, c.Batch.Attempt)
	}
	if !slices.Equal(attempts, []uint32{1, 2, 3, 4, 5}) {
		t.Errorf("attempts %v", attempts)
	}
	if got := h.backoff.get(); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("backoff after attempts %v, want [1 2 3 4]", got)
	}
	if got := committed(t, kf, group, "a")["a"]; got != -1 {
		t.Errorf("committed %d", got)
	}
}

// A plugin that breaks the contract (the host's CONTRACT code) stops the
// consumer at once, as FATAL does.
func TestContractBreachStops(t *testing.T) {
	p := &fakeplugin.Plugin{}
	p.Queue(fakeplugin.Result{Code: hostclient.StatusContract, Message: "consume returned status 7"})
	_, h := oneBatch(t, fake(p), 2)
	h.start()
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Attempts != 1 || se.Outcome != pipeline.Fatal || hostclient.CodeOf(err) != hostclient.StatusContract {
		t.Fatalf("Run = %v, want a stop on the breach", err)
	}
}

// The open is retried while the plugin answers RETRY or its host dies,
// with the sink starting and nothing consumed; once open, it consumes.
func TestOpenRetried(t *testing.T) {
	p := &fakeplugin.Plugin{}
	p.QueueOpen(fakeplugin.OpenError(hostclient.StatusRetry, "connection refused"), fakeplugin.OpenExit(), nil)
	kf, h := oneBatch(t, fake(p), 2)
	h.start()
	poll.Until(t, 10*time.Second, "commit at 2", func() bool { return committed(t, kf, group, "a")["a"] == 2 })
	if got := h.openBackoff.get(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("open backoff after attempts %v, want [1 2]", got)
	}
	if got := p.Opens(); got != 3 {
		t.Errorf("%d opens, want 3", got)
	}
	if !h.logged("event=open_retry") || !h.logged("event=sink_opened attempt=3") {
		t.Error("the open retries and the open not logged")
	}
	if st, _ := h.sink.State(); st != pipeline.StateRunning {
		t.Errorf("state %s", st)
	}
}

// An open that cannot succeed by trying again: BAD_CONFIG is a
// *RefusedError, FATAL the plugin's error; either stops the sink before it
// consumes anything.
func TestOpenRefused(t *testing.T) {
	for _, c := range []struct {
		code    hostclient.Status
		refused bool
	}{{hostclient.StatusBadConfig, true}, {hostclient.StatusABIMismatch, true}, {hostclient.StatusFatal, false}, {hostclient.StatusContract, false}} {
		t.Run(c.code.String(), func(t *testing.T) {
			p := &fakeplugin.Plugin{}
			p.QueueOpen(fakeplugin.OpenError(c.code, "no"))
			_, h := oneBatch(t, fake(p), 1)
			h.start()
			err := h.wait(30 * time.Second)
			var re *pipeline.RefusedError
			if errors.As(err, &re) != c.refused || hostclient.CodeOf(err) != c.code {
				t.Fatalf("Run = %v (%T), want refused %v", err, err, c.refused)
			}
			if st, serr := h.sink.State(); st != pipeline.StateError || serr == nil {
				t.Errorf("state %s %v", st, serr)
			}
			if n := len(p.Calls()); n != 0 || p.Opens() != 1 || len(h.openBackoff.get()) != 0 {
				t.Errorf("%d consumes, %d opens, open backoff %v after a refusal", n, p.Opens(), h.openBackoff.get())
			}
		})
	}
}

// A consume that outlasts the shutdown timeout is given up: Run says so,
// the consume's context ended, and the batch is not committed.
func TestShutdownTimeoutAbandonsConsume(t *testing.T) {
	p := &fakeplugin.Plugin{}
	p.Queue(fakeplugin.Result{Delay: time.Hour})
	kf, h := oneBatch(t, fake(p), 1)
	h.shutdownTimeout = 200 * time.Millisecond
	h.start()
	if !p.Wait(10*time.Second, func(s fakeplugin.State) bool { return s.Started == 1 }) {
		t.Fatal("no consume began")
	}
	err := h.stop()
	if err == nil || !strings.Contains(err.Error(), "shutdown timed out with a batch in flight") {
		t.Fatalf("Run = %v", err)
	}
	if calls := p.Calls(); len(calls) != 1 || !errors.Is(calls[0].Err, context.Canceled) {
		t.Errorf("calls %+v, want the one consume cancelled", calls)
	}
	if got := committed(t, kf, group, "a")["a"]; got != -1 {
		t.Errorf("committed %d", got)
	}
}
