package hostclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Built once by TestMain: the host and copies of the C stub plugin
// (cmd/picomq-host/testdata/stubplugin.c) under different names, so that one host
// can load distinct libraries: stub-a of the header's ABI, stub-b of ABI 1.0,
// stub-c of ABI 1.4 (before pipelined batches).
var hostBin, stubA, stubB, stubC string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hostclient-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if hostBin, err = hosttest.Build(dir); err == nil {
			if stubA, err = buildStub(dir, "stub-a"); err == nil {
				// stub-b is a 1.0-style plugin: it reports ABI 1.0 and
				// never reads the batch's 1.1 fields.
				stubB, err = buildStub(dir, "stub-b", "-DSTUB_ABI_MINOR=0")
			}
			if err == nil {
				stubC, err = buildStub(dir, "stub-c", "-DSTUB_ABI_MINOR=4")
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

func buildStub(dir, name string, flags ...string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name+".so")
	// -z nodelete, as Go links its c-shared libraries: the stub's late-log
	// thread may outlive dlclose at host exit.
	cmd := exec.Command("gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-g",
		"-shared", "-fPIC", "-pthread", "-Wl,-z,nodelete",
		"-I", filepath.Join(root, "include"), fmt.Sprintf("-DSTUB_NAME=%q", name))
	cmd.Args = append(cmd.Args, flags...)
	cmd.Args = append(cmd.Args, "-o", out, filepath.Join(root, "cmd/picomq-host/testdata/stubplugin.c"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, msg)
	}
	return out, nil
}

// start starts a host for t. PICOMQ_HOST_WRAPPER runs it under a wrapper,
// e.g. PICOMQ_HOST_WRAPPER="valgrind -q --error-exitcode=99".
func start(t *testing.T, opts ...hostclient.Option) *hostclient.Host {
	t.Helper()
	return hosttest.StartTest(t, hostBin, append(wrapper(), opts...)...)
}

func wrapper() []hostclient.Option {
	if w := os.Getenv("PICOMQ_HOST_WRAPPER"); w != "" {
		return []hostclient.Option{hosttest.Wrapper(strings.Fields(w)...), hostclient.ExitTimeout(5 * time.Minute)}
	}
	return nil
}

func load(t *testing.T, h *hostclient.Host, path string, opts ...hostclient.CallOption) *hostclient.Lib {
	t.Helper()
	lib, err := h.Load(path, opts...)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return lib
}

func open(t *testing.T, lib *hostclient.Lib, config string, opts ...hostclient.CallOption) *hostclient.Instance {
	t.Helper()
	inst, err := lib.Open(config, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", config, err)
	}
	return inst
}

// wantStatus checks that err is a *StatusError with code and a message
// containing msg.
func wantStatus(t *testing.T, err error, code hostclient.Status, msg string) {
	t.Helper()
	var se *hostclient.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("got error %v, want a *StatusError %s", err, code)
	}
	if se.Code != code || !strings.Contains(se.Message, msg) {
		t.Fatalf("got %v, want %s with a message containing %q", err, code, msg)
	}
}

func metrics(t *testing.T, inst *hostclient.Instance) (batches, records uint64) {
	t.Helper()
	js, err := inst.Metrics()
	if err != nil {
		t.Fatalf("Metrics: %v", err)
	}
	var m struct{ Batches, Records uint64 }
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("metrics %q: %v", js, err)
	}
	return m.Batches, m.Records
}

func batch(topic string, payloads ...string) hostclient.Batch {
	b := hostclient.Batch{Attempt: 1, Topic: topic, Schema: "json"}
	for i, p := range payloads {
		b.Records = append(b.Records, hostclient.Record{Offset: uint64(i), Payload: []byte(p)})
	}
	return b
}

const config = `{"key":"k","name":"n","version":1,"plugin_config":{"table":"t"}}`

func TestLoad(t *testing.T) {
	h := start(t)
	a := load(t, h, stubA)
	if major, minor := a.ABI(); major != 1 || minor != 5 {
		t.Errorf("ABI() = %d.%d, want 1.5", major, minor)
	}
	if major, minor := load(t, h, stubB).ABI(); major != 1 || minor != 0 {
		t.Errorf("1.0-style stub: ABI() = %d.%d, want 1.0", major, minor)
	}
	if again := load(t, h, stubA); again.ID() != a.ID() {
		t.Errorf("loading %s again gave library %d, want %d", stubA, again.ID(), a.ID())
	}
	if b := load(t, h, stubB); b.ID() == a.ID() {
		t.Errorf("two libraries share id %d", a.ID())
	}

	_, err := h.Load("/nonexistent/plugin.so")
	wantStatus(t, err, hostclient.StatusHostError, "dlopen")
	_, err = h.Load("libm.so.6")
	wantStatus(t, err, hostclient.StatusHostError, "no picomq_sink_plugin_init")
}

func TestABIMismatch(t *testing.T) {
	h := start(t)
	_, err := h.Load(stubA, hosttest.ABI(2, 0))
	wantStatus(t, err, hostclient.StatusABIMismatch, "returned ABI_MISMATCH")
	var se *hostclient.StatusError
	if errors.As(err, &se); se.Op != "load" {
		t.Errorf("Op = %q, want load", se.Op)
	}
	// A newer minor version is fine, and the refusal left nothing behind.
	lib, err := h.Load(stubA, hosttest.ABI(1, 7))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Describe(); err != nil {
		t.Fatal(err)
	}
}

func TestTableSize(t *testing.T) {
	h := start(t)
	// struct_size, abi_major, abi_minor, describe, open: an older host's table.
	lib := load(t, h, stubA, hosttest.TableSize(32))
	if _, err := lib.Describe(); err != nil {
		t.Fatal(err)
	}
	inst := open(t, lib, config)
	wantStatus(t, inst.Consume(batch("t", "{}")), hostclient.StatusHostError, "has no consume")

	// A newer host's longer table.
	load(t, h, stubB, hosttest.TableSize(200))
	_, err := h.Load(stubB, hosttest.TableSize(4))
	wantStatus(t, err, hostclient.StatusHostError, "out of range")
}

func TestDescribeBufferTooSmall(t *testing.T) {
	h := start(t)
	lib := load(t, h, stubA)
	for _, tc := range []struct {
		cap, calls int
	}{{64, 2}, {0, 2}, {1, 2}, {4096, 1}} {
		var calls int
		js, err := lib.Describe(hosttest.OutCap(tc.cap), hosttest.CallCount(&calls))
		if err != nil {
			t.Fatalf("OutCap(%d): %v", tc.cap, err)
		}
		if calls != tc.calls {
			t.Errorf("OutCap(%d): %d calls, want %d", tc.cap, calls, tc.calls)
		}
		var v struct{ Name string }
		if err := json.Unmarshal([]byte(js), &v); err != nil || v.Name != "stub-a" || len(js) <= 64 {
			t.Errorf("OutCap(%d): describe = %q (%v)", tc.cap, js, err)
		}
	}
}

func TestInstanceLifecycle(t *testing.T) {
	h := start(t)
	lib := load(t, h, stubA)

	_, err := lib.Open(`{"plugin_config":{"bad":1}}`)
	wantStatus(t, err, hostclient.StatusBadConfig, "plugin_config.bad")

	inst := open(t, lib, config)
	if inst.Handle() == 0 {
		t.Fatal("handle 0")
	}
	if err := inst.Consume(batch("t", "{}", "{}", "{}")); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, inst.Consume(batch("retry", "{}", "{}")), hostclient.StatusRetry, "retry: 2 records")
	wantStatus(t, inst.Consume(batch("fatal")), hostclient.StatusFatal, "fatal requested")
	if err := inst.Consume(batch("empty")); err != nil {
		t.Fatal(err)
	}
	if b, r := metrics(t, inst); b != 2 || r != 3 {
		t.Errorf("metrics: %d batches, %d records; want 2, 3", b, r)
	}
	var calls int
	if _, err := inst.Metrics(hosttest.OutCap(8), hosttest.CallCount(&calls)); err != nil || calls != 2 {
		t.Errorf("Metrics(OutCap(8)): %d calls, %v; want 2 calls", calls, err)
	}
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}

	// The handle is invalid now: FATAL, never a crash.
	wantStatus(t, inst.Consume(batch("t", "{}")), hostclient.StatusFatal, "unknown instance")
	_, err = inst.Metrics()
	wantStatus(t, err, hostclient.StatusFatal, "metrics returned FATAL")
	wantStatus(t, inst.Close(), hostclient.StatusFatal, "unknown instance")
	wantStatus(t, lib.Instance(12345).Consume(batch("t")), hostclient.StatusFatal, "unknown instance 12345")
	if got := hostclient.CodeOf(inst.Close()); got != hostclient.StatusFatal {
		t.Errorf("CodeOf = %s, want FATAL", got)
	}
}

// The stub's "echo" topic returns its view of the batch as RETRY text: this
// checks every field the host builds from the frame.
func TestBatchEncoding(t *testing.T) {
	h := start(t)
	inst := open(t, load(t, h, stubA), config)
	b := hostclient.Batch{
		Attempt: 3, Partition: 7, Topic: "echo", Schema: "avro",
		Records: []hostclient.Record{
			{Offset: 10, TimestampMs: -5, Payload: []byte("hello")},
			{Offset: 11, TimestampMs: 1700000000000, Key: []byte{},
				Headers: []hostclient.Header{{Key: "k1", Value: []byte("v1")}, {Key: "", Value: nil}},
			},
			{Offset: 1<<64 - 1, Key: []byte{0, 0xff}, Payload: []byte{0, 1, 2}},
		},
	}
	want := "attempt=3 partition=7 topic=echo schema=avro records=3" +
		"|off=10 ts=-5 key=- headers=[] payload=x68656c6c6f" +
		"|off=11 ts=1700000000000 key=x headers=[x6b31:x7631,x:x] payload=x" +
		"|off=18446744073709551615 ts=0 key=x00ff headers=[] payload=x000102"
	wantStatus(t, inst.Consume(b, hosttest.ErrCap(4096)), hostclient.StatusRetry, want)

	wantStatus(t, inst.Consume(hostclient.Batch{Topic: "echo"}), hostclient.StatusRetry,
		"attempt=0 partition=0 topic=echo schema= records=0")
}

// ABI 1.3: a batch's value_schema reaches the plugin in a full-size batch
// (an empty one as present), and not in a 1.2 host's, whose struct_size ends
// before it (the host poisons what follows); a 1.2 plugin never reads it,
// and rejections still work in a 1.2-size batch.
func TestValueSchema(t *testing.T) {
	h := start(t)
	inst := open(t, load(t, h, stubA), config)
	b := hostclient.Batch{Attempt: 1, Topic: "echo", Schema: "json", ValueSchema: []byte(`{"a":1}`)}
	wantStatus(t, inst.Consume(b), hostclient.StatusRetry,
		"attempt=1 partition=0 topic=echo schema=json records=0 value_schema=x7b2261223a317d")
	b.ValueSchema = []byte{}
	wantStatus(t, inst.Consume(b), hostclient.StatusRetry, "records=0 value_schema=x")
	b.ValueSchema = []byte(`{"a":1}`)
	err := inst.Consume(b, hosttest.Batch1_2())
	wantStatus(t, err, hostclient.StatusRetry, "records=0")
	if strings.Contains(err.Error(), "value_schema") {
		t.Errorf("a 1.2 batch shows a value schema: %v", err)
	}
	rb := batch("reject", "{}", "bad one")
	rb.AcceptRejections, rb.ValueSchema = true, []byte(`{}`)
	rej, err := inst.ConsumeResult(rb, hosttest.Batch1_2())
	if err != nil || len(rej) != 1 || rej[0].Index != 1 {
		t.Errorf("rejections in a 1.2 batch: %+v, %v", rej, err)
	}
}

// ABI 1.4: a redrive batch's dead-letter side reaches the plugin in a
// full-size batch, with the value schema before it; not in a 1.3 host's
// batch, whose struct_size ends at value_schema. An offset list that does
// not match the records is refused by the host.
func TestRedrive(t *testing.T) {
	h := start(t)
	inst := open(t, load(t, h, stubA), config)
	b := batch("echo", "{}", "{}")
	b.ValueSchema = []byte(`{}`)
	b.Redrive = &hostclient.Redrive{Topic: "echo.dlq", Partition: 3, Offsets: []uint64{7, 42}}
	wantStatus(t, inst.Consume(b), hostclient.StatusRetry,
		"records=2 value_schema=x7b7d redrive=echo.dlq/3@7,42|off=0")
	err := inst.Consume(b, hosttest.Batch1_3())
	wantStatus(t, err, hostclient.StatusRetry, "records=2 value_schema=x7b7d|off=0")
	b.Redrive.Offsets = []uint64{7}
	wantStatus(t, inst.Consume(b), hostclient.StatusHostError, "malformed CONSUME request")
}

// ABI 1.5: range_last and follows reach a pipelined library in a full-size
// batch, after the redrive fields; not in a 1.4 host's batch, whose
// struct_size ends at redrive_offsets. A range_last without follows is an
// ordinary batch, which every library takes.
func TestPipelined(t *testing.T) {
	h := start(t)
	inst := open(t, load(t, h, stubA), config)
	b := batch("echo", "{}", "{}")
	b.RangeLast = 41
	wantStatus(t, inst.Consume(b), hostclient.StatusRetry, "records=2 range_last=41|off=0")
	b.Follows = new(uint64(29))
	wantStatus(t, inst.Consume(b), hostclient.StatusRetry, "records=2 range_last=41 follows=29|off=0")
	b.Follows = new(uint64(0)) // the batch before ended at offset 0: still pipelined
	wantStatus(t, inst.Consume(b), hostclient.StatusRetry, "records=2 range_last=41 follows=0|off=0")
	wantStatus(t, inst.Consume(b, hosttest.Batch1_4()), hostclient.StatusRetry, "records=2|off=0")
}

// A library before ABI 1.5 never reads has_follows and would write a
// pipelined batch even when the one before it failed: hostclient refuses to
// send it one (before the host sees the request), while its ordinary
// batches, range_last included, still work.
func TestPipelinedRefusedToOlderLibrary(t *testing.T) {
	h := start(t)
	for _, c := range []struct{ path, abi string }{{stubC, "ABI 1.4"}, {stubB, "ABI 1.0"}} {
		lib := load(t, h, c.path)
		inst := open(t, lib, config)
		b := batch("t", "{}")
		b.RangeLast = 7
		if err := inst.Consume(b); err != nil {
			t.Fatalf("%s: ordinary batch with RangeLast: %v", c.abi, err)
		}
		b.Follows = new(uint64(3))
		err := inst.Consume(b)
		if err == nil || !strings.Contains(err.Error(), c.abi) || !strings.Contains(err.Error(), `declares "pipelined"`) {
			t.Fatalf("%s: pipelined batch: err = %v, want a refusal naming the ABI", c.abi, err)
		}
		if batches, _ := metrics(t, inst); batches != 1 {
			t.Errorf("%s: the library saw %d batches, want only the ordinary one", c.abi, batches)
		}
	}
}

func TestErrCap(t *testing.T) {
	h := start(t)
	inst := open(t, load(t, h, stubA), config)
	for _, tc := range []struct {
		cap  int
		want string
	}{{8, "retry: "}, {1, ""}, {0, ""}, {1024, "retry: 1 records"}} {
		err := inst.Consume(batch("retry", "{}"), hosttest.ErrCap(tc.cap))
		var se *hostclient.StatusError
		if !errors.As(err, &se) || se.Code != hostclient.StatusRetry || se.Message != tc.want {
			t.Errorf("ErrCap(%d): %v, want RETRY %q", tc.cap, err, tc.want)
		}
	}
}

func TestContractViolations(t *testing.T) {
	h := start(t)
	inst := open(t, load(t, h, stubA), config)
	wantStatus(t, inst.Consume(batch("nonul")), hostclient.StatusContract, "not NUL-terminated")
	wantStatus(t, inst.Consume(batch("badutf8")), hostclient.StatusContract, "not UTF-8")
}

// A plugin that keeps a pointer into a batch reads poison afterwards.
func TestLentMemoryIsPoisoned(t *testing.T) {
	h := start(t)
	inst := open(t, load(t, h, stubA), config)
	if err := inst.Consume(batch("keep", "hello")); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, inst.Consume(batch("peek")), hostclient.StatusRetry, "xa5a5a5a5a5")
}

func TestLogs(t *testing.T) {
	var mu sync.Mutex
	var seen []hostclient.LogLine
	h := start(t, hostclient.OnLog(func(l hostclient.LogLine) {
		mu.Lock()
		seen = append(seen, l)
		mu.Unlock()
	}))
	lib := load(t, h, stubA)
	inst := open(t, lib, config)

	logs := inst.Logs()
	if len(logs) != 1 {
		t.Fatalf("after open: %v, want one line", logs)
	}
	l := logs[0]
	if l.Level != slog.LevelInfo || l.Lib != lib.ID() || l.Late || l.Ctx != inst.Ctx() ||
		l.Message != fmt.Sprintf("stub-a: opened instance %d config_len=%d", inst.Handle(), len(config)) {
		t.Errorf("open log line: %+v", l)
	}

	if err := inst.Consume(batch("log", "one", "two")); err != nil {
		t.Fatal(err)
	}
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range inst.Logs() {
		got = append(got, l.Level.String()+" "+l.Message)
	}
	want := []string{
		fmt.Sprintf("INFO stub-a: opened instance %d config_len=%d", inst.Handle(), len(config)),
		"WARN one", "WARN two",
		fmt.Sprintf("INFO stub-a: closing instance %d", inst.Handle()),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mu.Lock()
	if len(seen) != 4 {
		t.Errorf("OnLog saw %d lines, want 4", len(seen))
	}
	mu.Unlock()

	// log == NULL: the plugin logs to stderr.
	quiet := open(t, lib, config, hosttest.NoLog())
	if n := len(quiet.Logs()); n != 0 {
		t.Errorf("NoLog: %d lines captured", n)
	}
	line := fmt.Sprintf("stub-a: opened instance %d", quiet.Handle())
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(h.Stderr(), line); {
		if time.Now().After(deadline) {
			t.Fatalf("NoLog: stderr %q lacks %q", h.Stderr(), line)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLateLogIsFlagged(t *testing.T) {
	h := start(t)
	inst := open(t, load(t, h, stubA), `{"plugin_config":{"latelog":true}}`)
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := h.WaitLog(ctx, func(l hostclient.LogLine) bool { return l.Ctx == inst.Ctx() && l.Late })
	if err != nil {
		t.Fatal(err)
	}
	if l.Level != slog.LevelError || l.Lib != 0 || !strings.Contains(l.Message, "after close") {
		t.Errorf("late line: %+v", l)
	}
}

// Two libraries, several instances each, driven from many goroutines on all
// host workers.
func TestConcurrency(t *testing.T) {
	const workers = 8
	h := start(t, hostclient.Workers(workers))
	libs := []*hostclient.Lib{load(t, h, stubA), load(t, h, stubB)}
	var insts []*hostclient.Instance
	for _, lib := range libs {
		for range workers / 2 {
			insts = append(insts, open(t, lib, config))
		}
	}

	// Each library's barrier opens only when 4 calls are inside its consume
	// at once: the 8 calls on 8 workers must really run concurrently.
	var wg sync.WaitGroup
	for i, inst := range insts {
		wg.Go(func() {
			if err := inst.ConsumeOn(i, batch("barrier:4", "{}")); err != nil {
				t.Errorf("barrier on worker %d: %v", i, err)
			}
		})
	}
	wg.Wait()

	// Many calls, out of order: each goroutine checks that every response
	// is its own (RETRY texts carry the record count) and counts what it
	// wrote, which the metrics must match.
	const goroutines, calls = 32, 150
	var mu sync.Mutex
	wantRecords := make([]uint64, len(insts))
	wantBatches := make([]uint64, len(insts))
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for c := range calls {
				i := rng.IntN(len(insts))
				n := rng.IntN(20)
				payloads := make([]string, n)
				for k := range payloads {
					payloads[k] = fmt.Sprintf(`{"g":%d,"c":%d}`, g, c)
				}
				switch c % 3 {
				case 0:
					err := insts[i].Consume(batch("retry", payloads...))
					var se *hostclient.StatusError
					if !errors.As(err, &se) || se.Message != fmt.Sprintf("retry: %d records", n) {
						t.Errorf("retry with %d records: %v", n, err)
						return
					}
				case 1:
					if _, err := insts[i].Metrics(); err != nil {
						t.Error(err)
						return
					}
				default:
					if err := insts[i].ConsumeOn(rng.IntN(workers), batch("t", payloads...)); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					wantBatches[i]++
					wantRecords[i] += uint64(n)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for i, inst := range insts {
		if b, r := metrics(t, inst); b != wantBatches[i]+1 || r != wantRecords[i]+1 {
			t.Errorf("instance %d: %d batches, %d records; want %d, %d", i, b, r, wantBatches[i]+1, wantRecords[i]+1)
		}
		if err := inst.Close(); err != nil {
			t.Error(err)
		}
	}
}

// By default a call goes to an idle worker, so metrics does not queue behind
// a consume that blocks.
func TestCallsAvoidBusyWorkers(t *testing.T) {
	h := start(t, hostclient.Workers(2))
	inst := open(t, load(t, h, stubA), config)
	slow := make(chan error, 1)
	go func() { slow <- inst.Consume(batch("sleep:1500")) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := inst.Metrics(hostclient.WithContext(ctx)); err != nil {
		t.Errorf("metrics during a slow consume: %v", err)
	}
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}

func TestCallContext(t *testing.T) {
	h := start(t)
	inst := open(t, load(t, h, stubA), config)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := inst.Consume(batch("sleep:500"), hostclient.WithContext(ctx))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if hostclient.CodeOf(err) != hostclient.StatusHostError {
		t.Errorf("CodeOf(%v) = %s", err, hostclient.CodeOf(err))
	}
	if b, _ := metrics(t, inst); b != 0 {
		t.Errorf("%d batches before the abandoned call finished", b)
	}
}

func TestUnknownWorker(t *testing.T) {
	h := start(t, hostclient.Workers(2))
	inst := open(t, load(t, h, stubA), config)
	wantStatus(t, inst.ConsumeOn(99, batch("t")), hostclient.StatusHostError, "no worker 99")
}

// Setenv and Unsetenv change the host process's environment as the C
// library sees it, for the plugin's next call on any worker.
func TestSetenv(t *testing.T) {
	h := start(t, hostclient.Workers(2), hostclient.Env("PICOMQ_STUB_VAR=from-start"))
	inst := open(t, load(t, h, stubA), config)
	get := func(worker int) error { return inst.ConsumeOn(worker, batch("getenv", "PICOMQ_STUB_VAR")) }
	wantStatus(t, get(0), hostclient.StatusRetry, "PICOMQ_STUB_VAR=from-start")
	if err := h.Setenv("PICOMQ_STUB_VAR", "set later", hostclient.OnWorker(0)); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, get(1), hostclient.StatusRetry, "PICOMQ_STUB_VAR=set later")
	if err := h.Setenv("PICOMQ_STUB_VAR", ""); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, get(0), hostclient.StatusRetry, "PICOMQ_STUB_VAR=")
	if err := h.Unsetenv("PICOMQ_STUB_VAR"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, get(1), hostclient.StatusRetry, "PICOMQ_STUB_VAR unset")
	wantStatus(t, h.Setenv("A=B", "x"), hostclient.StatusHostError, "bad name")
	wantStatus(t, h.Setenv("", "x"), hostclient.StatusHostError, "bad name")
	wantStatus(t, h.Setenv("A", "x\x00y"), hostclient.StatusHostError, "bad name or value")
}

// A crash fails every pending and later call with the exit status and
// stderr, promptly.
func TestCrash(t *testing.T) {
	h := start(t)
	lib := load(t, h, stubA)
	a, b := open(t, lib, config), open(t, lib, config)

	pending := make(chan error, 1)
	go func() { pending <- b.ConsumeOn(1, batch("barrier:2")) }() // waits 10 s for a partner
	time.Sleep(100 * time.Millisecond)

	err := a.ConsumeOn(0, batch("abort"))
	var ee *hostclient.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("got %v, want an *ExitError", err)
	}
	if ws, ok := ee.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGABRT {
		t.Errorf("process state %v, want SIGABRT", ee.ProcessState)
	}
	if msg := err.Error(); !strings.Contains(msg, "signal: aborted") || !strings.Contains(msg, "stub-a: abort requested") {
		t.Errorf("error %q lacks the signal or the stderr", msg)
	}

	select {
	case err := <-pending:
		if !errors.As(err, &ee) {
			t.Errorf("pending call: %v, want an *ExitError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call pending during the crash did not return")
	}
	<-h.Done()
	if _, err := a.Metrics(); !errors.As(err, &ee) {
		t.Errorf("call after the crash: %v", err)
	}
	if _, err := h.Load(stubB); !errors.As(err, &ee) {
		t.Errorf("load after the crash: %v", err)
	}
	if err := h.Close(); !errors.As(err, &ee) {
		t.Errorf("Close after the crash: %v", err)
	}
}

func TestKill(t *testing.T) {
	h := start(t)
	inst := open(t, load(t, h, stubA), config)
	h.Kill()
	err := inst.Consume(batch("t"))
	var ee *hostclient.ExitError
	if !errors.As(err, &ee) || ee.Reason != "killed by Kill" || !strings.Contains(ee.State, "killed") {
		t.Errorf("after Kill: %v", err)
	}
}

// Close lets the host close what is still open and exit 0; calls after it
// fail with ErrClosed.
func TestCloseClosesLeftovers(t *testing.T) {
	h, err := hostclient.Start(context.Background(), hostBin, wrapper()...)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := load(t, h, stubA).Open(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	logs := inst.Logs()
	if len(logs) != 2 || !strings.Contains(logs[1].Message, "closing instance") {
		t.Errorf("logs %v, want the open and the close", logs)
	}
	if !strings.Contains(h.Stderr(), fmt.Sprintf("closed leftover instance %d of library 1: OK", inst.Handle())) {
		t.Errorf("stderr %q", h.Stderr())
	}
	if err := inst.Consume(batch("t")); !errors.Is(err, hostclient.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// A "host" that never says HELLO.
	_, err := hostclient.Start(ctx, hostBin, hosttest.Wrapper("sh", "-c", "sleep 10", "--"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("silent host: %v, want DeadlineExceeded", err)
	}
	if _, err := hostclient.Start(context.Background(), "/nonexistent/picomq_host"); err == nil {
		t.Error("started a missing binary")
	}
	// A host that exits at once: its error carries the exit status and stderr.
	_, err = hostclient.Start(context.Background(), hostBin, hosttest.Wrapper("sh", "-c", `echo oops >&2; exit 7`, "--"))
	var ee *hostclient.ExitError
	if !errors.As(err, &ee) || ee.State != "exit status 7" || !strings.Contains(ee.Stderr, "oops") {
		t.Errorf("failing host: %v", err)
	}
	if _, err := hostclient.Start(context.Background(), hostBin, hostclient.Workers(0)); err == nil {
		t.Error("Workers(0) accepted")
	}
}

func TestBuildHost(t *testing.T) {
	p1, p2 := hosttest.BuildHost(t), hosttest.BuildHost(t)
	if p1 != p2 {
		t.Errorf("BuildHost built twice: %s, %s", p1, p2)
	}
	h := hosttest.StartTest(t, p1)
	if major, minor := h.ABI(); major != 1 || minor != 5 {
		t.Errorf("host ABI %d.%d", major, minor)
	}
}

// ABI 1.1 rejections, both ways: a 1.1 plugin under a 1.1 host rejects
// single records and returns OK; under a 1.0 host (a batch without the 1.1
// fields) or without the callback it fails the batch as 1.0 does; a 1.0
// plugin under a 1.1 host ignores the callback and fails the batch.
func TestRejections(t *testing.T) {
	h := start(t)
	a, b := load(t, h, stubA), load(t, h, stubB)
	ia, ib := open(t, a, config), open(t, b, config)
	rb := batch("reject", "{}", "bad one", "{}", "bad two")
	rb.Records[3].Offset = 7

	rb.AcceptRejections = true
	rej, err := ia.ConsumeResult(rb)
	if err != nil {
		t.Fatal(err)
	}
	want := []hostclient.Rejection{
		{Index: 1, Reason: hostclient.RejectValue, Message: "bad record at offset 1"},
		{Index: 3, Reason: hostclient.RejectValue, Message: "bad record at offset 7"},
	}
	if !reflect.DeepEqual(rej, want) {
		t.Errorf("rejections %+v, want %+v", rej, want)
	}
	// Consume refuses to drop rejections unseen.
	if err := ia.Consume(rb); err == nil || !strings.Contains(err.Error(), "rejected 2 record(s)") {
		t.Errorf("Consume with rejections: %v", err)
	}

	// A 1.0 host: the batch ends at record_count (the host poisons what
	// follows), so the plugin cannot reject and fails as 1.0 says.
	_, err = ia.ConsumeResult(rb, hosttest.Batch1_0())
	wantStatus(t, err, hostclient.StatusFatal, "record at offset 1 is bad")
	// A 1.1 host that did not ask for rejections.
	rb.AcceptRejections = false
	_, err = ia.ConsumeResult(rb)
	wantStatus(t, err, hostclient.StatusFatal, "record at offset 1 is bad")
	// A 1.0 plugin under a 1.1 host that asks: FATAL, as before.
	rb.AcceptRejections = true
	rej, err = ib.ConsumeResult(rb)
	wantStatus(t, err, hostclient.StatusFatal, "record at offset 1 is bad")
	if rej != nil {
		t.Errorf("rejections with FATAL: %+v", rej)
	}
	// Both plugins still take a 1.0 host's good batch.
	for _, inst := range []*hostclient.Instance{ia, ib} {
		if err := inst.Consume(batch("reject", "{}"), hosttest.Batch1_0()); err != nil {
			t.Errorf("1.0 batch: %v", err)
		}
	}

	// Rejections without OK are forgotten.
	rr := batch("rejectretry", "{}", "{}")
	rr.AcceptRejections = true
	rej, err = ia.ConsumeResult(rr)
	wantStatus(t, err, hostclient.StatusRetry, "retry after a rejection")
	if rej != nil {
		t.Errorf("rejections with RETRY: %+v", rej)
	}
	// An index out of range breaks the contract.
	rr.Topic = "rejectbad"
	_, err = ia.ConsumeResult(rr)
	wantStatus(t, err, hostclient.StatusContract, "index out of range")
}
