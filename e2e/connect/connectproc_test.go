package connect_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
)

func writeDef(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// buildConnect builds cmd/picomq-connect into a temporary directory.
func buildConnect(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "picomq-connect")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/picomq-connect")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/picomq-connect: %v\n%s", err, out)
	}
	return bin
}

// connectProc is the picomq-connect process under test, restarted by
// waitCommitted whenever it is not running.
type connectProc struct {
	t                                          *testing.T
	bin, host, plugins, brokers, defs          string
	log                                        string
	args                                       []string // more flags, before the definitions
	env                                        []string // more environment, KEY=value
	mu                                         sync.Mutex
	cmd                                        *exec.Cmd
	logFrom                                    int64 // the log's size when cmd started: its lines come after
	exited                                     chan struct{}
	code                                       int
	starts, runtimeKills, hostKills, selfExits int
}

// startConnect starts the built picomq-connect on the definitions in defs
// against brokers, logging to a file of the test's, killed at cleanup.
func startConnect(t *testing.T, brokers []string, defs string) *connectProc {
	t.Helper()
	rt := &connectProc{t: t, bin: buildConnect(t), host: hosttest.BuildHost(t), plugins: distDir(t),
		brokers: strings.Join(brokers, ","), defs: defs, log: filepath.Join(t.TempDir(), "connect.log")}
	t.Cleanup(rt.kill)
	rt.start()
	return rt
}

func (r *connectProc) start() {
	r.t.Helper()
	f, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "---- start %d\n", r.starts+1)
	logFrom, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		r.t.Fatal(err)
	}
	args := append([]string{"--brokers", r.brokers, "--plugin-dir", r.plugins, "--host", r.host,
		"--workers", "2", "--shutdown-timeout", "60s"}, r.args...)
	cmd := exec.Command(r.bin, append(args, r.defs)...)
	if len(r.env) > 0 {
		cmd.Env = append(os.Environ(), r.env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	exited := make(chan struct{})
	r.mu.Lock()
	r.cmd, r.exited, r.logFrom = cmd, exited, logFrom
	r.starts++
	r.mu.Unlock()
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		r.mu.Lock()
		r.code = code
		r.mu.Unlock()
		close(exited)
	}()
}

// running reports whether the current process has not exited.
func (r *connectProc) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// children are the pids of the runtime's child processes (its plugin
// hosts).
func (r *connectProc) children() []int { return hosttest.Children(r.cmd.Process.Pid) }

// chaosKill sends SIGKILL either to one plugin host (the runtime restarts
// it) or to the runtime and all its hosts at once (the test restarts it).
func (r *connectProc) chaosKill(rng *rand.Rand) {
	if !r.running() {
		r.selfExits++
		r.t.Logf("chaos: picomq-connect had exited (%d); restarting\n%s", r.code, r.tail())
		r.start()
		return
	}
	kids := r.children()
	if len(kids) > 0 && rng.IntN(3) == 0 {
		pid := kids[rng.IntN(len(kids))]
		r.t.Logf("chaos: kill -9 host %d", pid)
		syscall.Kill(pid, syscall.SIGKILL)
		r.hostKills++
		return
	}
	r.t.Logf("chaos: kill -9 picomq-connect %d and hosts %v", r.cmd.Process.Pid, kids)
	r.cmd.Process.Signal(syscall.SIGKILL)
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	<-r.exited
	r.runtimeKills++
	r.start()
}

// stop sends SIGTERM and returns the exit code. It first waits, for at
// most 30 s, until the process has started a sink: a SIGTERM before the
// runtime installs its handler (Go's package init, reading the
// definitions) ends it by the signal, exit -1, which is every program's
// default and not what the tests check. A chaos run met that when its last
// start found every offset committed already and stopped it at once.
func (r *connectProc) stop() int {
	for deadline := time.Now().Add(30 * time.Second); r.running() && !r.sinkStarted() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(90 * time.Second):
		r.t.Errorf("picomq-connect did not exit 90 s after SIGTERM")
		r.kill()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code
}

// waitGroupAtEnds restarts any of procs that exited by itself (a sink that
// hit its retry limit during an outage stops, and the runtime exits 1 once
// no sink runs; a restarted one resumes from the committed offsets), until
// group's committed offsets equal ends.
func waitGroupAtEnds(t *testing.T, adm *kadm.Client, group string, ends kadm.ListedOffsets, timeout time.Duration, procs ...*connectProc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, p := range procs {
			if !p.running() {
				p.selfExits++
				t.Logf("picomq-connect exited (%d) by itself; restarting\n%s", p.code, p.tail())
				p.start()
			}
		}
		committed, err := adm.FetchOffsets(context.Background(), group)
		behind := 0
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := committed.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
				behind++
			}
		})
		if err == nil && behind == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s: %d partitions not at the end offsets after %v (%v)\n%s", group, behind, timeout, err, procs[0].tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (r *connectProc) kill() {
	if r.cmd != nil && r.running() {
		for _, pid := range r.children() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.exited
	}
}

// summary counts the runtime's log lines that show the chaos at work.
func (r *connectProc) summary() string {
	b, _ := os.ReadFile(r.log)
	var parts []string
	for _, what := range []string{"delivering again", "plugin process died", "plugin host process exited", "commit failed", "consumer stopped"} {
		parts = append(parts, fmt.Sprintf("%d × %q", strings.Count(string(b), what), what))
	}
	return strings.Join(parts, ", ")
}

// sinkStarted reports whether the current process logged a sink's start,
// which it does once it handles SIGTERM.
func (r *connectProc) sinkStarted() bool {
	b, _ := os.ReadFile(r.log)
	if int64(len(b)) <= r.logFrom {
		return false
	}
	lines := string(b[r.logFrom:])
	return strings.Contains(lines, "event=sink_started") || strings.Contains(lines, `"event":"sink_started"`)
}

// tail is the end of the runtime's log.
func (r *connectProc) tail() string {
	b, _ := os.ReadFile(r.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
