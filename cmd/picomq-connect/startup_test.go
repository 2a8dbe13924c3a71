package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/picomq/heavy-sinks/connect/observe"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/logbuf"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
)

// captured sends run's stderr to a buffer for one test, and prints it
// when the test fails.
func captured(t *testing.T) *logbuf.Buffer {
	t.Helper()
	lb := &logbuf.Buffer{}
	stderr = lb
	t.Cleanup(func() {
		stderr = os.Stderr
		if t.Failed() {
			t.Logf("stderr:\n%s", lb)
		}
	})
	return lb
}

// lines decodes every line of a --log-format json run; a line that is not
// a JSON object fails the test.
func lines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a line that is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

func event(name string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["event"] == name }
}

// waitCommitted waits until group has committed offset want on a/0.
func waitCommitted(t *testing.T, kf *kfake.Cluster, group string, want int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := adm.FetchOffsets(context.Background(), group)
		if o, ok := resp.Lookup("a", 0); err == nil && ok && o.At == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never committed offset %d", group, want)
		}
	}
}

func waitExit(t *testing.T, done chan int, within time.Duration) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(within):
		t.Fatalf("no exit within %v", within)
		return -1
	}
}

func sigterm(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// get returns the status code and body of a GET of url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// A destination down at start is waited for: the sink stays starting,
// /readyz answers 503, each attempt is logged with its backoff, and the
// other sink runs meanwhile. Once the destination answers, the sink opens
// and delivers.
func TestDestinationDownAtStart(t *testing.T) {
	down := filepath.Join(t.TempDir(), "down")
	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kf, defDir, records := setup(t, fmt.Sprintf("down_file = %q", down))
	writeDef(t, defDir, "up", "")
	logs := captured(t)
	servers := listened(t)
	a := append([]string{"--log-format", "json", "--http", "127.0.0.1:0"}, args(t, kf, defDir)...)
	done := make(chan int, 1)
	go func() { done <- run(a) }()
	url := endpoint(t, servers)

	retry := logs.WaitJSON(t, "open_retry attempt 2 of cli", func(m map[string]any) bool {
		return m["event"] == "open_retry" && m["sink_key"] == "cli" && m["attempt"] == 2.0
	})
	if retry["backoff_seconds"] != 0.4 || retry["level"] != "WARN" ||
		!strings.HasPrefix(retry["err"].(string), "open: RETRY: test plugin: "+down+" exists: connection refused") {
		t.Errorf("open_retry line: %v", retry)
	}
	// The sink whose plugin opened does not wait for the other.
	waitCommitted(t, kf, "picomq-connect-sink-up", 7)
	if code, body := get(t, url+"/readyz"); code != http.StatusServiceUnavailable || body != "cli starting\n" {
		t.Errorf("/readyz while cli waits: %d %q", code, body)
	}
	var st observe.Status
	if _, body := get(t, url+"/status"); json.Unmarshal([]byte(body), &st) != nil || len(st.Sinks) != 2 ||
		st.Sinks[0].Key != "cli" || st.Sinks[0].State != "starting" || st.Sinks[1].State != "running" {
		t.Errorf("/status while cli waits: %s", body)
	}
	select {
	case code := <-done:
		t.Fatalf("exited with %d while a destination was down", code)
	default:
	}

	if err := os.Remove(down); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, kf, "picomq-connect-sink-cli", 7)
	if code, body := get(t, url+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once both run: %d %q", code, body)
	}
	opened := logs.WaitJSON(t, "sink_opened of cli", func(m map[string]any) bool {
		return m["event"] == "sink_opened" && m["sink_key"] == "cli"
	})
	if opened["attempt"].(float64) < 3 {
		t.Errorf("cli opened at attempt %v, after two retries at least", opened["attempt"])
	}
	if b, _ := os.ReadFile(records); bytes.Count(b, []byte("\n")) != 2 { // 5 + 2 records
		t.Errorf("cli's records: %s", b)
	}
	sigterm(t)
	if code := waitExit(t, done, 30*time.Second); code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
}

// SIGTERM while a sink waits for its destination is a shutdown with
// nothing consumed: exit 0.
func TestSIGTERMWhileDestinationDown(t *testing.T) {
	down := filepath.Join(t.TempDir(), "down")
	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kf, defDir, records := setup(t, fmt.Sprintf("down_file = %q", down))
	logs := captured(t)
	a := append([]string{"--log-format", "json"}, args(t, kf, defDir)...)
	done := make(chan int, 1)
	go func() { done <- run(a) }()
	logs.WaitJSON(t, "open_retry", event("open_retry"))
	sigterm(t)
	if code := waitExit(t, done, 30*time.Second); code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
	if b, _ := os.ReadFile(records); len(b) > 0 {
		t.Errorf("batches were delivered: %s", b)
	}
	ls := lines(t, logs.String())
	if last := ls[len(ls)-1]; last["event"] != "runtime_stopped" || last["exit_code"] != 0.0 {
		t.Errorf("last line %v", last)
	}
}

// FATAL at open (here a panic in open) stops that sink as FATAL at consume
// does: state error, exit 1. It is not a refused configuration.
func TestFatalAtOpen(t *testing.T) {
	kf, defDir, _ := setup(t, `fail_mode = "panic_open"`)
	logs := captured(t)
	a := append([]string{"--log-format", "json"}, args(t, kf, defDir)...)
	done := make(chan int, 1)
	go func() { done <- run(a) }()
	if code := waitExit(t, done, 30*time.Second); code != exitSinkError {
		t.Errorf("exit code %d, want %d", code, exitSinkError)
	}
	failed := logs.WaitJSON(t, "sink_failed", event("sink_failed"))
	if !strings.HasPrefix(failed["err"].(string), "open: FATAL: ") {
		t.Errorf("sink_failed line: %v", failed)
	}
}

// With a stalled destination, --shutdown-timeout bounds the shutdown: the
// plugin host is killed, the runtime exits 1, and the batch in flight is
// not committed.
func TestShutdownTimeoutKillsStalledHost(t *testing.T) {
	kf, defDir, records := setup(t, `delay = "1h"`)
	logs := captured(t)
	a := append([]string{"--log-format", "json", "--shutdown-timeout", "2s"}, args(t, kf, defDir)...)
	done := make(chan int, 1)
	go func() { done <- run(a) }()
	pid := int(logs.WaitJSON(t, "host_started", event("host_started"))["pid"].(float64))
	logs.WaitJSON(t, "consume delayed", func(m map[string]any) bool {
		msg, _ := m["msg"].(string)
		return m["source"] == "plugin" && strings.HasPrefix(msg, "consume delayed ")
	})
	sigterm(t)
	// 2 s, and a margin for a loaded machine; without the bound the
	// shutdown waited for the hour-long consume.
	if code := waitExit(t, done, 12*time.Second); code != exitSinkError {
		t.Errorf("exit code %d, want %d", code, exitSinkError)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("plugin host %d still there: kill 0 = %v", pid, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "picomq-connect-sink-cli")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := resp.Lookup("a", 0); ok && o.At >= 0 {
		t.Errorf("offset %d committed for a batch never written", o.At)
	}
	if b, _ := os.ReadFile(records); len(b) > 0 {
		t.Errorf("batches were recorded: %s", b)
	}
	ls := lines(t, logs.String())
	if last := ls[len(ls)-1]; last["event"] != "runtime_stopped" || last["exit_code"] != 1.0 {
		t.Errorf("last line %v", last)
	}
}

// Every reason start-up fails is a log line in the format asked for, with
// an event, and the last line is runtime_stopped with the exit code.
func TestStartupFailuresLogged(t *testing.T) {
	kf, _, _ := setup(t, "")
	dist := distDir(t)
	noKey := filepath.Join(t.TempDir(), "nokey.toml")
	os.WriteFile(noKey, []byte("type = \"sink\"\npath = \"p\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n"), 0o644)
	noLib := filepath.Join(t.TempDir(), "nolib.toml")
	os.WriteFile(noLib, []byte("type = \"sink\"\nkey = \"k\"\n\npath = \"test/libnope\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n"), 0o644)
	refused := t.TempDir()
	writeDef(t, refused, "cli", `colour = "red"`)
	// A file where the library should be that dlopen refuses.
	badDir := t.TempDir()
	os.MkdirAll(filepath.Join(badDir, "test"), 0o755)
	badLib := filepath.Join(badDir, "test", "libpicomq_connector_test_a_sink.so")
	os.WriteFile(badLib, []byte("not a library"), 0o644)
	for _, tc := range []struct {
		name  string
		args  []string
		event string
		err   string // a prefix of the line's err
	}{
		{"missing key", []string{noKey}, "startup_failed", noKey + `: key: missing: every sink has a key`},
		{"missing library", []string{"--plugin-dir", dist, noLib}, "startup_failed",
			noLib + `:4:1: path: "test/libnope" resolves to ` + dist + `/test/libnope.so: no such file or directory`},
		{"refused at open", args(t, kf, refused), "sink_refused", `open: BAD_CONFIG: `},
		{"library that cannot load", []string{"--brokers", strings.Join(kf.ListenAddrs(), ","), "--plugin-dir", badDir, "--host", hosttest.BuildHost(t), refused}, "sink_refused", badLib + `: load: HOST_ERROR: `},
		{"no arguments", nil, "startup_failed", "usage: picomq-connect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := captured(t)
			if code := run(append([]string{"--log-format", "json"}, tc.args...)); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			ls := lines(t, logs.String())
			found := false
			for _, l := range ls {
				if l["event"] == tc.event {
					found = true
					if err, _ := l["err"].(string); !strings.HasPrefix(err, tc.err) || strings.Contains(err, "open: open:") {
						t.Errorf("err %q\nwant it to start with %q", err, tc.err)
					}
				}
			}
			if !found {
				t.Errorf("no %s line", tc.event)
			}
			if last := ls[len(ls)-1]; last["event"] != "runtime_stopped" || last["exit_code"] != 2.0 {
				t.Errorf("last line %v", last)
			}
		})
	}
	t.Run("text", func(t *testing.T) {
		logs := captured(t)
		if code := run([]string{noKey}); code != exitUsage {
			t.Errorf("exit code %d, want %d", code, exitUsage)
		}
		ls := strings.Split(strings.TrimSpace(logs.String()), "\n")
		if !strings.Contains(ls[0], "event=startup_failed") || !strings.Contains(ls[len(ls)-1], "event=runtime_stopped exit_code=2") {
			t.Errorf("text lines:\n%s", logs)
		}
	})
}

// --shutdown-timeout bounds leaving the consumer group too: a broker that
// does not answer the leave does not hold the exit. The deadline passed
// before the plugin was closed, so the exit says the shutdown timed out,
// though every record was committed.
func TestShutdownTimeoutBoundsLeave(t *testing.T) {
	kf, defDir, _ := setup(t, "")
	logs := captured(t)
	a := append([]string{"--log-format", "json", "--shutdown-timeout", "2s"}, args(t, kf, defDir)...)
	done := make(chan int, 1)
	go func() { done <- run(a) }()
	waitCommitted(t, kf, "picomq-connect-sink-cli", 7)
	stall := make(chan struct{})
	defer close(stall)
	kf.ControlKey(int16(kmsg.LeaveGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		kf.SleepControl(func() { <-stall })
		return nil, nil, false
	})
	sigterm(t)
	if code := waitExit(t, done, 12*time.Second); code != exitSinkError {
		t.Errorf("exit code %d, want %d", code, exitSinkError)
	}
	logs.WaitJSON(t, "leave_group_timeout", event("leave_group_timeout"))
	logs.WaitJSON(t, "shutdown_timeout", event("shutdown_timeout"))
}

// A sink refused at open after waiting (its destination came back and
// rejects the credentials) stops the sinks that run: they flush and
// commit, and the exit code says a configuration needs fixing.
func TestRefusedAfterWaitStopsEverySink(t *testing.T) {
	down := filepath.Join(t.TempDir(), "down")
	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kf, defDir, _ := setup(t, fmt.Sprintf("down_file = %q", down))
	writeDef(t, defDir, "up", "")
	logs := captured(t)
	a := append([]string{"--log-format", "json"}, args(t, kf, defDir)...)
	done := make(chan int, 1)
	go func() { done <- run(a) }()
	logs.WaitJSON(t, "open_retry", event("open_retry"))
	waitCommitted(t, kf, "picomq-connect-sink-up", 7)
	if err := os.WriteFile(down, []byte("refuse"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, done, 30*time.Second); code != exitUsage {
		t.Errorf("exit code %d, want %d", code, exitUsage)
	}
	refused := logs.WaitJSON(t, "sink_refused", event("sink_refused"))
	if refused["sink_key"] != "cli" || !strings.HasPrefix(refused["err"].(string), "open: BAD_CONFIG: ") {
		t.Errorf("sink_refused line: %v", refused)
	}
	logs.WaitJSON(t, "consumer_stopped of up", func(m map[string]any) bool {
		return m["event"] == "consumer_stopped" && m["sink_key"] == "up"
	})
}

// A library whose loading never answers does not hold the runtime: SIGTERM
// while its host loads it ends the start-up (exit 0, nothing consumed) and
// its host is killed. The load waited with the process lock held, and every
// later caller, the shutdown included, waited behind it for ever.
func TestSIGTERMWhileALibraryLoads(t *testing.T) {
	t.Setenv("PICOMQ_TEST_PLUGIN_LOAD_DELAY", "1h")
	kf, defDir, _ := setup(t, "")
	logs := captured(t)
	a := append([]string{"--log-format", "json", "--shutdown-timeout", "2s"}, args(t, kf, defDir)...)
	done := make(chan int, 1)
	go func() { done <- run(a) }()
	logs.WaitJSON(t, "sink_started", event("sink_started"))
	// The host is started and loading: a child of ours that has not said
	// host_started (the test process starts no other child).
	hosts := func() []int { return hosttest.Children(os.Getpid()) }
	poll.Until(t, 30*time.Second, "a picomq-host child", func() bool { return len(hosts()) > 0 })
	sigterm(t)
	if code := waitExit(t, done, 12*time.Second); code != exitOK {
		t.Errorf("exit code %d, want %d", code, exitOK)
	}
	poll.Until(t, 5*time.Second, "no picomq-host child left", func() bool { return len(hosts()) == 0 })
}
