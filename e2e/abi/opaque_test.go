package abi_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// The tests of this file pass the plugin values that are the host's and
// need not be addresses. Go aborts the whole host process ("invalid pointer
// found on stack") when it copies a goroutine stack with a value below 4096
// in a pointer slot, so a Go plugin must never hold one as a pointer.

// The log callback's ctx: the C host passes its request counter, a small
// integer. The SDK held it as a Go pointer, and the host aborted whenever
// the collector shrank a stack while a line was on its way out (a CI run
// lost a Delta sink host that way; this test failed 4 runs in 5 then). It
// logs a lot from stacks that grow and shrink under a tiny GOGC; every line
// must arrive with its instance's ctx, and the host live.
func TestLogContextIsOpaque(t *testing.T) {
	const (
		instances = 3
		batches   = 200
		lines     = 2000
	)
	var (
		mu     sync.Mutex
		logged = map[uint64]int{} // "log line"s by ctx; a late one counts as ctx 0
	)
	h := startHost(t, hostclient.Workers(instances), hostclient.Env("GOGC=1", "GODEBUG=asyncpreemptoff=1"),
		hostclient.KeepLogs(1), hostclient.OnLog(func(l hostclient.LogLine) {
			if strings.HasPrefix(l.Message, "log line ") {
				ctx := l.Ctx
				if l.Late {
					ctx = 0
				}
				mu.Lock()
				logged[ctx]++
				mu.Unlock()
			}
		}))
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, instances)
	want := map[uint64]int{}
	for i := range instances {
		rec := filepath.Join(t.TempDir(), "rec.jsonl")
		inst, err := lib.Open(definition(t, fmt.Sprintf("logs_%d", i), map[string]any{"record_path": rec, "log_lines": lines}))
		if err != nil {
			t.Fatal(err)
		}
		// The point of the test: a ctx that is no address.
		if inst.Ctx() == 0 || inst.Ctx() >= 4096 {
			t.Fatalf("instance %d has log ctx %d; the test needs one in [1, 4096)", i, inst.Ctx())
		}
		want[inst.Ctx()] = batches * lines
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range batches {
				b := hostclient.Batch{Attempt: 1, Topic: "logs", Schema: "raw", Records: []hostclient.Record{{Offset: uint64(n), Payload: []byte("x")}}}
				if err := inst.ConsumeOn(i, b); err != nil {
					errs <- fmt.Errorf("instance %d batch %d: %w", i, n, err)
					return
				}
			}
			errs <- inst.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !maps.Equal(logged, want) {
		t.Fatalf("log lines by ctx %v, want %v", logged, want)
	}
}

// The header lets an empty, present byte string and an empty array carry
// any non-NULL pointer; a Rust host passes its empty slices' dangling one.
// The plugin must read them as empty, present values, and never hold the
// pointer: here the test plugin grows its stack while each record is in
// hand, so a slice of such a pointer on it would abort the host.
func TestEmptyValuesThatPointNowhere(t *testing.T) {
	h := startHost(t)
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	inst, err := lib.Open(definition(t, "empties", map[string]any{"record_path": rec, "grow_stack": true}))
	if err != nil {
		t.Fatal(err)
	}
	b := hostclient.Batch{Attempt: 1, Topic: "orders", Schema: "raw", ValueSchema: []byte{}}
	for i := range 8 {
		b.Records = append(b.Records, hostclient.Record{Offset: uint64(i), Key: []byte{}, Payload: []byte{},
			Headers: []hostclient.Header{{Key: "", Value: []byte{}}}})
	}
	b.Records[7].Key, b.Records[7].Headers = nil, nil // absent key, no headers
	if err := inst.Consume(b, hosttest.DanglingEmpties()); err != nil {
		t.Fatal(err)
	}
	got := readRecorded(t, rec)
	if len(got) != 1 || got[0].ValueSchema == nil || *got[0].ValueSchema != "" || len(got[0].Records) != 8 {
		t.Fatalf("recorded %+v", got)
	}
	for i, r := range got[0].Records {
		wantKey, wantHeaders := true, 1
		if i == 7 {
			wantKey, wantHeaders = false, 0
		}
		if r.Offset != uint64(i) || r.Payload != "" || (r.Key != nil) != wantKey || (r.Key != nil && *r.Key != "") ||
			len(r.Headers) != wantHeaders || (wantHeaders == 1 && r.Headers[0] != [2]string{"", ""}) {
			t.Fatalf("record %d recorded as %+v", i, r)
		}
	}
}
