package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/observe"
	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
)

// distDir is $PICOMQ_DIST or <repo>/dist, with the test plugin built.
func distDir(t *testing.T) string {
	t.Helper()
	return filepath.Dir(filepath.Dir(testenv.Library(t, "test/libpicomq_connector_test_a_sink.so")))
}

func setup(t *testing.T, pluginConfig string) (kf *kfake.Cluster, defDir, records string) {
	t.Helper()
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 7 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "a", Value: fmt.Appendf(nil, `{"i":%d}`, i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	defDir = t.TempDir()
	records = writeDef(t, defDir, "cli", pluginConfig)
	return kf, defDir, records
}

// writeDef writes the definition of sink key, which consumes topic "a"
// into the test plugin with pluginConfig, to dir/<key>.toml, and returns
// its record file.
func writeDef(t *testing.T, dir, key, pluginConfig string) (records string) {
	t.Helper()
	records = filepath.Join(t.TempDir(), "records.jsonl")
	def := fmt.Sprintf(`type = "sink"
key = %q
name = "cli test"
path = "test/libpicomq_connector_test_a_sink"

[[topics]]
topics = ["a"]
schema = "json"
batch_length = 5
poll_interval = "50ms"

[plugin_config]
record_path = %q
%s
`, key, records, pluginConfig)
	if err := os.WriteFile(filepath.Join(dir, key+".toml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	return records
}

func args(t *testing.T, kf *kfake.Cluster, defDir string) []string {
	return []string{"--brokers", strings.Join(kf.ListenAddrs(), ","), "--plugin-dir", distDir(t),
		"--host", hosttest.BuildHost(t), "--log-level", "debug", defDir}
}

// The command runs a definition until SIGTERM, then exits 0 with every
// record committed.
func TestRunUntilSIGTERM(t *testing.T) {
	kf, defDir, _ := setup(t, "")
	done := make(chan int, 1)
	go func() { done <- run(args(t, kf, defDir)) }()
	waitCommitted(t, kf, "picomq-connect-sink-cli", 7)
	sigterm(t)
	if code := waitExit(t, done, 30*time.Second); code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
}

// listened replaces listen for one test; the servers started arrive on
// the channel.
func listened(t *testing.T) chan *observe.Server {
	servers := make(chan *observe.Server, 4)
	t.Cleanup(func() { listen = observe.Listen })
	listen = func(addr string, h http.Handler, log *slog.Logger) (*observe.Server, error) {
		s, err := observe.Listen(addr, h, log)
		if err == nil {
			servers <- s
		}
		return s, err
	}
	return servers
}

// endpoint waits for the server --http started and returns its URL.
func endpoint(t *testing.T, servers chan *observe.Server) string {
	t.Helper()
	select {
	case s := <-servers:
		return "http://" + s.Addr()
	case <-time.After(20 * time.Second):
		t.Fatal("--http started no endpoint")
		return ""
	}
}

// SIGTERM while a plugin is still opening is a shutdown, not a refused
// configuration: exit 0, nothing consumed.
func TestSIGTERMDuringOpen(t *testing.T) {
	kf, defDir, records := setup(t, `open_delay = "3s"`)
	done := make(chan int, 1)
	a := args(t, kf, defDir) // builds the host: not inside the window below
	go func() { done <- run(a) }()
	// The plugin creates its record file as its open begins, after run
	// took over SIGTERM.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(records); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin's open never began")
		}
	}
	sigterm(t)
	if code := waitExit(t, done, 30*time.Second); code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
	if b, _ := os.ReadFile(records); len(b) > 0 { // open creates the file
		t.Errorf("batches were delivered: %s", b)
	}
}

// A sink that stops on FATAL makes the command exit 1 once nothing runs.
// Without --http nothing listens.
func TestExitCodeOnSinkError(t *testing.T) {
	kf, defDir, _ := setup(t, `fail_mode = "fatal"`)
	servers := listened(t)
	done := make(chan int, 1)
	go func() { done <- run(args(t, kf, defDir)) }()
	if code := waitExit(t, done, 30*time.Second); code != exitSinkError {
		t.Errorf("exit code %d, want %d", code, exitSinkError)
	}
	if len(servers) != 0 {
		t.Errorf("an HTTP endpoint listened on %s without --http", (<-servers).Addr())
	}
}

// --http serves the endpoint while the sinks run: /status reaches lag 0
// once everything is committed, /metrics counts the records.
func TestHTTPEndpoint(t *testing.T) {
	kf, defDir, _ := setup(t, "")
	servers := listened(t)
	done := make(chan int, 1)
	go func() { done <- run(append([]string{"--http", "127.0.0.1:0"}, args(t, kf, defDir)...)) }()
	url := endpoint(t, servers)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var st observe.Status
		if _, body := get(t, url+"/status"); json.Unmarshal([]byte(body), &st) == nil && len(st.Sinks) == 1 &&
			len(st.Sinks[0].Partitions) == 1 && st.Sinks[0].Partitions[0].CommittedOffset != nil &&
			*st.Sinks[0].Partitions[0].CommittedOffset == 7 && st.Sinks[0].Lag == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/status never showed offset 7 committed with lag 0")
		}
	}
	if _, body := get(t, url+"/metrics"); !strings.Contains(body, `picomq_connect_records_delivered_total{sink_key="cli",topic="a"} 7`) {
		t.Errorf("/metrics:\n%s", body)
	}
	sigterm(t)
	if code := waitExit(t, done, 30*time.Second); code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("the endpoint still serves after the command returned")
	}
	// A taken address is refused at start.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if code := run(append([]string{"--http", ln.Addr().String()}, args(t, kf, defDir)...)); code != exitUsage {
		t.Errorf("--http on a taken address: exit %d, want %d", code, exitUsage)
	}
}

// Bad definitions and refused plugin configs exit 2 before consuming.
func TestExitCodeUsage(t *testing.T) {
	kf, defDir, _ := setup(t, `colour = "red"`)
	if code := run(args(t, kf, defDir)); code != exitUsage {
		t.Errorf("plugin refusing its config: exit %d, want %d", code, exitUsage)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("type = \"sink\"\nkey = \"k\"\npath = \"p\"\nbatch = 1\n"), 0o644)
	if code := run([]string{"--check", bad}); code != exitUsage {
		t.Errorf("bad definition: exit %d, want %d", code, exitUsage)
	}
	if code := run(append([]string{"--check"}, args(t, kf, defDir)...)); code != exitUsage {
		t.Errorf("--check of the config the plugin refuses: exit %d, want %d", code, exitUsage)
	}
}

// The GC target is 400 unless GOGC is set, which the Go runtime then
// applies itself.
func TestGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	setGCPercent(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != defaultGOGC {
		t.Errorf("GC percent %d without GOGC, want %d", got, defaultGOGC)
	}
	setGCPercent(func(k string) string { return map[string]string{"GOGC": "100"}[k] })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent %d with GOGC=100, want it left alone", got)
	}
}

// --max-buffered-bytes below what one poll buffers flushes early: the
// flushes are counted on /metrics, every record is committed, and the
// buffered bytes return to 0. A negative cap is refused at start.
func TestMaxBufferedBytes(t *testing.T) {
	kf, defDir, _ := setup(t, "")
	if code := run(append([]string{"--max-buffered-bytes", "-1"}, args(t, kf, defDir)...)); code != exitUsage {
		t.Errorf("--max-buffered-bytes -1: exit %d, want %d", code, exitUsage)
	}
	servers := listened(t)
	done := make(chan int, 1)
	// The 7 records are 7 bytes each; batch_length is 5: a cap of 10
	// bytes flushes the 2 left after the first full batch at once.
	go func() {
		done <- run(append([]string{"--http", "127.0.0.1:0", "--max-buffered-bytes", "10"}, args(t, kf, defDir)...))
	}()
	url := endpoint(t, servers)
	waitCommitted(t, kf, "picomq-connect-sink-cli", 7)
	flushes := regexp.MustCompile(`(?m)^picomq_connect_memory_flushes_total ([1-9][0-9]*)$`)
	var body string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, body = get(t, url+"/metrics"); flushes.MatchString(body) && strings.Contains(body, "\npicomq_connect_buffered_bytes 0\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed an early flush with nothing left buffered:\n%s", body)
		}
	}
	sigterm(t)
	if code := waitExit(t, done, 30*time.Second); code != exitOK {
		t.Errorf("exit code %d, want 0", code)
	}
}
