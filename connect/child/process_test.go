package child_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/logbuf"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// The restarts of a Process, with the real C host (built from source by
// hosttest.BuildHost) and the e2e test plugin from $PICOMQ_DIST: these
// cases run in `make e2e` and skip in `make unit`.

// fixture is a Process of the test plugin and the file its instances
// record their batches to.
type fixture struct {
	t    *testing.T
	p    *child.Process
	log  *slog.Logger
	logs *logbuf.Buffer // the lines of the process's and its instances' loggers
	dir  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	lib := testenv.E2ELibrary(t, "test/libpicomq_connector_test_a_sink.so")
	l := &logbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := child.New(hosttest.BuildHost(t), lib, child.Options{Logger: log, Workers: 2})
	t.Cleanup(func() { p.Close() })
	return &fixture{t: t, p: p, log: log, logs: l, dir: t.TempDir()}
}

// config is an instance's open() JSON: the test plugin recording to
// <dir>/<name>.jsonl, with more plugin_config keys.
func (f *fixture) config(name string, more map[string]any) string {
	pc := map[string]any{"record_path": filepath.Join(f.dir, name+".jsonl")}
	for k, v := range more {
		pc[k] = v
	}
	b, err := json.Marshal(map[string]any{"key": name, "name": name, "version": 1, "plugin_config": pc})
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// recorded is the offsets of the batches instance name wrote, one entry
// per batch.
func (f *fixture) recorded(name string) []uint64 {
	f.t.Helper()
	file, err := os.Open(filepath.Join(f.dir, name+".jsonl"))
	if err != nil {
		f.t.Fatal(err)
	}
	defer file.Close()
	var out []uint64
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		var l struct {
			Records []struct {
				Offset uint64 `json:"offset"`
			} `json:"records"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			f.t.Fatal(err)
		}
		for _, r := range l.Records {
			out = append(out, r.Offset)
		}
	}
	return out
}

func batch(offset uint64) hostclient.Batch {
	return hostclient.Batch{Attempt: 1, Topic: "a", Schema: "json",
		Records: []hostclient.Record{{Offset: offset, Payload: fmt.Appendf(nil, `{"n":%d}`, offset)}}}
}

// kill SIGKILLs the running child and waits until the Process sees it
// gone.
func (f *fixture) kill() int {
	f.t.Helper()
	pid := f.p.Pid()
	if pid == 0 {
		f.t.Fatal("no child runs")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		f.t.Fatal(err)
	}
	poll.Until(f.t, 10*time.Second, "the child's exit seen", func() bool { return f.p.Pid() == 0 })
	return pid
}

// logged is how many times s occurs in the log.
func (f *fixture) logged(s string) int { return strings.Count(f.logs.String(), s) }

// waitLog waits for a line containing s, the count-th.
func (f *fixture) waitLog(s string, count int) {
	f.t.Helper()
	poll.Until(f.t, 20*time.Second, fmt.Sprintf("%d× %q logged", count, s), func() bool { return f.logged(s) >= count })
}

// inCall opens instance "a" with the plugin's consume delay and starts a
// Consume of batch(0) on ctx; it returns once the plugin logs that it is
// in the call, with the channel the call's error arrives on.
func (f *fixture) inCall(ctx context.Context, delay string) (*child.Instance, chan error) {
	f.t.Helper()
	inst, err := f.p.Open(context.Background(), f.config("a", map[string]any{"delay": delay}), f.log)
	if err != nil {
		f.t.Fatal(err)
	}
	done := consumeAsync(ctx, inst, 0)
	f.waitLog("consume delayed", 1)
	return inst, done
}

// consumeAsync starts a Consume of batch(offset) on ctx; its error
// arrives on the channel.
func consumeAsync(ctx context.Context, inst *child.Instance, offset uint64) chan error {
	done := make(chan error, 1)
	go func() {
		_, err := inst.Consume(ctx, batch(offset))
		done <- err
	}()
	return done
}

// A child killed between calls is started again by the next call, which
// reopens every instance that calls in it: both instances write again,
// each opened twice, and Restarts counts the one death. Metrics does not
// restart a dead child: it answers ErrNotOpen until a call has.
func TestRestartAfterKillReopensInstances(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, err := f.p.Open(ctx, f.config("a", nil), f.log)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.p.Open(ctx, f.config("b", nil), f.log)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []*child.Instance{a, b} {
		if _, err := i.Consume(ctx, batch(0)); err != nil {
			t.Fatal(err)
		}
	}
	old := f.kill()
	if _, err := b.Metrics(ctx); !errors.Is(err, child.ErrNotOpen) {
		t.Errorf("Metrics of a dead child's instance: %v, want ErrNotOpen", err)
	}
	if f.p.Pid() != 0 || f.p.Restarts() != 0 {
		t.Errorf("Metrics started a child: pid %d, %d restarts", f.p.Pid(), f.p.Restarts())
	}
	if _, err := a.Consume(ctx, batch(1)); err != nil {
		t.Fatalf("the call after the death: %v", err)
	}
	pid := f.p.Pid()
	if pid == 0 || pid == old || f.p.Restarts() != 1 {
		t.Fatalf("pid %d (was %d), %d restarts", pid, old, f.p.Restarts())
	}
	if _, err := b.Consume(ctx, batch(1)); err != nil {
		t.Fatalf("b after the restart: %v", err)
	}
	if f.p.Pid() != pid || f.p.Restarts() != 1 {
		t.Errorf("b's call started another child: pid %d, %d restarts", f.p.Pid(), f.p.Restarts())
	}
	for _, name := range []string{"a", "b"} {
		if got := f.recorded(name); fmt.Sprint(got) != "[0 1]" {
			t.Errorf("%s recorded %v, want [0 1]", name, got)
		}
	}
	if n := f.logged("test sink opened"); n != 4 {
		t.Errorf("%d opens logged, want 2 instances × 2 children", n)
	}
	if n := f.logged("event=host_exited"); n != 1 {
		t.Errorf("%d host_exited lines", n)
	}
	if _, err := b.Metrics(ctx); err != nil {
		t.Errorf("Metrics after the reopen: %v", err)
	}
	for _, i := range []*child.Instance{a, b} {
		if err := i.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
}

// A call in flight when the child dies returns an error matching ErrExited
// that wraps the driver's *hostclient.ExitError (how it ended, its
// stderr); the next call runs in a new child.
func TestCallInFlightWhenChildDies(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	inst, done := f.inCall(ctx, "10s")
	f.kill()
	var err2 error
	select {
	case err2 = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight did not return after its child died")
	}
	var ee *hostclient.ExitError
	if !errors.Is(err2, child.ErrExited) || !errors.As(err2, &ee) || !strings.Contains(ee.State, "killed") {
		t.Fatalf("Consume = %v, want ErrExited wrapping the ExitError of a kill", err2)
	}
	if hostclient.CodeOf(err2) != hostclient.StatusHostError {
		t.Errorf("code %v: a death is no plugin status", hostclient.CodeOf(err2))
	}
	// The next call starts a new child; its wait shows it is the plugin
	// again, not an error.
	callCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done = consumeAsync(callCtx, inst, 1)
	f.waitLog("consume delayed", 2)
	if f.p.Restarts() != 1 || f.p.Pid() == 0 {
		t.Errorf("%d restarts, pid %d", f.p.Restarts(), f.p.Pid())
	}
	f.kill() // no 10 s wait: the death is the subject here
	if err := <-done; !errors.Is(err, child.ErrExited) {
		t.Errorf("second call: %v", err)
	}
}

// A Consume whose context ends first kills its child before it returns
// the context's error, so the plugin stops writing the batch; the next
// call starts a new child.
func TestAbandonedConsumeKillsTheChild(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	callCtx, cancel := context.WithCancel(ctx)
	inst, done := f.inCall(callCtx, "3s")
	pid := f.p.Pid()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, child.ErrExited) {
		t.Fatalf("Consume = %v, want the context's error", err)
	}
	if f.logged("event=host_killed") != 1 {
		t.Error("no host_killed line")
	}
	poll.Until(t, 10*time.Second, "the child gone", func() bool { return f.p.Pid() == 0 })
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("child %d still there: %v", pid, err)
	}
	if got := f.recorded("a"); len(got) != 0 {
		t.Errorf("the abandoned batch was written: %v", got)
	}
	if _, err := inst.Consume(ctx, batch(1)); err != nil || f.p.Restarts() != 1 {
		t.Fatalf("the next call: %v, %d restarts", err, f.p.Restarts())
	}
}

// Close during a call lets the call finish (the host finishes the calls it
// has, then closes its instances and exits); no child starts after it.
// Shutdown whose context ends during a call kills the child: the call
// returns ErrExited and Shutdown says it killed the child.
func TestCloseDuringACall(t *testing.T) {
	t.Run("close", func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		inst, done := f.inCall(ctx, "500ms")
		if err := f.p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("the call Close waited for: %v", err)
		}
		if got := f.recorded("a"); fmt.Sprint(got) != "[0]" {
			t.Errorf("recorded %v", got)
		}
		if _, err := inst.Consume(ctx, batch(1)); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("a call after Close: %v", err)
		}
		if f.p.Pid() != 0 || f.p.Restarts() != 0 {
			t.Errorf("a child after Close: pid %d, %d restarts", f.p.Pid(), f.p.Restarts())
		}
	})
	t.Run("shutdown timeout", func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		_, done := f.inCall(ctx, "30s")
		pid := f.p.Pid()
		sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		err := f.p.Shutdown(sctx)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("plugin host %d killed", pid)) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v", err)
		}
		if err := <-done; !errors.Is(err, child.ErrExited) {
			t.Errorf("the call in flight: %v, want ErrExited", err)
		}
		if got := f.recorded("a"); len(got) != 0 {
			t.Errorf("recorded %v", got)
		}
	})
}

// Consume calls of one instance that AllowOverlap overlap in the host. A
// library that declares concurrent_consume runs them together
// (ConcurrentConsume says so); one that does not runs them one after the
// other, both correct. Without AllowOverlap the instance runs them one at
// a time whatever the library declares. Close waits for every call in
// flight.
func TestConcurrentConsume(t *testing.T) {
	for _, c := range []struct{ conc, overlap bool }{{false, true}, {true, true}, {true, false}} {
		conc := c.conc
		t.Run(fmt.Sprintf("concurrent_consume=%v,overlap=%v", c.conc, c.overlap), func(t *testing.T) {
			if conc {
				t.Setenv("PICOMQ_TEST_PLUGIN_CONCURRENT", "1") // the child inherits it
			}
			f := newFixture(t) // 2 host threads
			ctx := context.Background()
			inst, err := f.p.Open(ctx, f.config("a", map[string]any{"delay": "400ms"}), f.log)
			if err != nil {
				t.Fatal(err)
			}
			if inst.ConcurrentConsume() != conc {
				t.Fatalf("ConcurrentConsume() = %v", !conc)
			}
			if c.overlap {
				inst.AllowOverlap()
			}
			a, b := consumeAsync(ctx, inst, 0), consumeAsync(ctx, inst, 1)
			f.waitLog("consume delayed", 1)
			closed := make(chan error, 1)
			go func() { closed <- inst.Close() }()
			for _, done := range []chan error{a, b} {
				if err := <-done; err != nil {
					t.Fatalf("Consume: %v", err)
				}
			}
			if err := <-closed; err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got := f.recorded("a"); len(got) != 2 {
				t.Fatalf("recorded %v, want both batches", got)
			}
			data, err := os.ReadFile(filepath.Join(f.dir, "a.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			most := 0
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var rec struct {
					Running int `json:"running"`
				}
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Fatal(err)
				}
				most = max(most, rec.Running)
			}
			if want := map[bool]int{false: 1, true: 2}[conc && c.overlap]; most != want {
				t.Errorf("at most %d calls in the plugin at once, want %d", most, want)
			}
		})
	}
}
