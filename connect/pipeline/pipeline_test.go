package pipeline_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

func seq(from, n int) []uint64 {
	var out []uint64
	for i := from; i < from+n; i++ {
		out = append(out, uint64(i))
	}
	return out
}

const group = "picomq-connect-sink-test"

// A bucket is flushed at batch_length; what is left waits (poll_interval
// is long) until shutdown flushes it and commits once.
func TestFlushBySizeAndShutdownFlush(t *testing.T) {
	both(t, func() *fakeplugin.Plugin { return &fakeplugin.Plugin{} }, "", testFlushBySizeAndShutdownFlush)
}

func testFlushBySizeAndShutdownFlush(t *testing.T, p plug) {
	kf := cluster(t, "a")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 10\npoll_interval = \"1h\"\n", p)
	produce(t, kf, "a", jsonPayloads(0, 25)...)
	h.start()
	poll.Until(t, 10*time.Second, "two full batches", func() bool { return len(h.lines()) == 2 })
	poll.Until(t, 5*time.Second, "commit at 20", func() bool { return committed(t, kf, group, "a")["a"] == 20 })
	time.Sleep(300 * time.Millisecond)
	if n := len(h.lines()); n != 2 {
		t.Fatalf("%d batches before shutdown, want 2: the 5 left must wait", n)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	lines := h.lines()
	var sizes []int
	for _, l := range lines {
		sizes = append(sizes, len(l.Records))
		if l.Attempt != 1 || l.Schema != "json" || l.Topic != "a" || l.Partition != 0 {
			t.Errorf("batch %+v", l)
		}
	}
	if !slices.Equal(sizes, []int{10, 10, 5}) {
		t.Errorf("batch sizes %v, want [10 10 5]", sizes)
	}
	if got := offsets(lines, "a"); !slices.Equal(got, seq(0, 25)) {
		t.Errorf("offsets %v", got)
	}
	r := lines[0].Records[0]
	if string(r.Payload) != `{"n":0}` || r.Key == nil || *r.Key != "aw==" || len(r.Headers) != 1 || r.Headers[0] != [2]string{"h", "v"} {
		t.Errorf("first record %+v", r)
	}
	if got := committed(t, kf, group, "a")["a"]; got != 25 {
		t.Errorf("committed %d after shutdown, want 25", got)
	}
	if st, _ := h.sink.State(); st != pipeline.StateStopped {
		t.Errorf("state %s", st)
	}
}

// A quiet topic is not held back: poll_interval after the last record, the
// bucket goes out short.
func TestFlushByIdle(t *testing.T) {
	kf := cluster(t, "a")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"a\"]\nschema = \"text\"\nbatch_length = 1000\npoll_interval = \"300ms\"\n", fake(&fakeplugin.Plugin{}))
	h.start()
	time.Sleep(time.Second) // joined
	sent := time.Now()
	produce(t, kf, "a", "x", "y", "z")
	poll.Until(t, 10*time.Second, "an idle flush", func() bool { return len(h.lines()) == 1 })
	if d := time.Since(sent); d < 300*time.Millisecond {
		t.Errorf("flushed %s after producing, before poll_interval", d)
	}
	poll.Until(t, 5*time.Second, "commit at 3", func() bool { return committed(t, kf, group, "a")["a"] == 3 })
	if l := h.lines()[0]; len(l.Records) != 3 || l.Schema != "text" {
		t.Errorf("batch %+v", l)
	}
}

// RETRY twice, then OK: the same batch with attempts 1, 2, 3 and a backoff
// after each failure; only then is the offset committed.
func TestRetryThenOK(t *testing.T) {
	both(t, func() *fakeplugin.Plugin { return script(hostclient.StatusRetry, "", 2) }, "fail_mode = \"retry\"\nfail_attempts = 2\n", testRetryThenOK)
}

func testRetryThenOK(t *testing.T, p plug) {
	kf, h := oneBatch(t, p, 4)
	h.start()
	poll.Until(t, 10*time.Second, "commit at 4", func() bool { return committed(t, kf, group, "a")["a"] == 4 })
	lines := h.lines()
	if len(lines) != 1 || lines[0].Attempt != 3 || len(lines[0].Records) != 4 {
		t.Fatalf("recorded %+v, want one batch of 4 at attempt 3", lines)
	}
	if got := h.backoff.get(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("backoff after attempts %v, want [1 2]", got)
	}
	if got := h.seen.outcomes(); !slices.Equal(got, []string{"a@0#1:retry", "a@0#2:retry", "a@0#3:ok"}) {
		t.Errorf("observed %v", got)
	}
}

// Five RETRYs stop the consumer: the sink is in error, the earlier
// topic's batch stays committed, the failed one is not, and a restart
// delivers the failed batch first.
func TestFifthFailureStops(t *testing.T) {
	kf := cluster(t, "good", "bad")
	blocks := "[[topics]]\ntopics = [\"good\", \"bad\"]\nschema = \"json\"\nbatch_length = 3\npoll_interval = \"100ms\"\n"
	h := newHarness(t, kf, blocks, fake(script(hostclient.StatusRetry, "bad", 0)))
	produce(t, kf, "good", jsonPayloads(0, 3)...)
	h.start()
	poll.Until(t, 10*time.Second, "good committed", func() bool { return committed(t, kf, group, "good")["good"] == 3 })
	produce(t, kf, "bad", jsonPayloads(0, 3)...)
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Attempts != 5 || se.Topic != "bad" || se.Offset != 0 || se.Outcome != pipeline.Retry {
		t.Fatalf("Run = %v, want a stop on bad@0 after 5 RETRYs", err)
	}
	if !strings.Contains(err.Error(), "asked to fail") || strings.Contains(err.Error(), "attempt 6") {
		t.Errorf("error text: %v", err)
	}
	if got := h.backoff.get(); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("backoff after attempts %v, want [1 2 3 4]", got)
	}
	if st, serr := h.sink.State(); st != pipeline.StateError || serr == nil {
		t.Errorf("state %s %v, want error", st, serr)
	}
	if got := committed(t, kf, group, "good", "bad"); got["good"] != 3 || got["bad"] != -1 {
		t.Errorf("committed %v, want good 3 and nothing for bad", got)
	}
	h.stop()

	// Restart without the failure: bad@0..2 is the first thing delivered.
	h2 := newHarness(t, kf, blocks, fake(&fakeplugin.Plugin{}))
	h2.start()
	poll.Until(t, 10*time.Second, "bad committed", func() bool { return committed(t, kf, group, "bad")["bad"] == 3 })
	lines := h2.lines()
	if len(lines) != 1 || lines[0].Topic != "bad" || !slices.Equal(offsets(lines, "bad"), seq(0, 3)) {
		t.Errorf("after restart: %+v", lines)
	}
}

// FATAL cannot succeed on retry: one attempt, then the consumer stops.
func TestFatalStopsAtOnce(t *testing.T) {
	kf, h := oneBatch(t, fake(script(hostclient.StatusFatal, "", 0)), 2)
	h.start()
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Attempts != 1 || se.Outcome != pipeline.Fatal {
		t.Fatalf("Run = %v, want a stop after one FATAL", err)
	}
	if got := h.backoff.get(); len(got) != 0 {
		t.Errorf("backoff %v after FATAL", got)
	}
	if got := committed(t, kf, group, "a")["a"]; got != -1 {
		t.Errorf("committed %d", got)
	}
}

// A payload that is not JSON under schema = "json" never reaches the
// plugin; the consumer stops naming its offset.
func TestInvalidJSONStops(t *testing.T) {
	kf := cluster(t, "a")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 3\n", fake(&fakeplugin.Plugin{}))
	produce(t, kf, "a", `{"ok":1}`, `{"bad"`, `{}`)
	h.start()
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Outcome != pipeline.Invalid || !strings.Contains(err.Error(), "offset 1 is not valid JSON") {
		t.Fatalf("Run = %v", err)
	}
	if n := len(h.fake.Calls()); n != 0 {
		t.Errorf("%d batches reached the plugin", n)
	}
}

// A topic created while the sink runs is picked up by its pattern.
func TestPatternPicksUpNewTopic(t *testing.T) {
	kf := cluster(t, "orders.eu", "other")
	h := newHarness(t, kf, "[[topics]]\npattern = 'orders\\..*'\nschema = \"json\"\nbatch_length = 2\n", fake(&fakeplugin.Plugin{}))
	produce(t, kf, "orders.eu", jsonPayloads(0, 2)...)
	produce(t, kf, "other", jsonPayloads(0, 2)...)
	h.start()
	poll.Until(t, 10*time.Second, "orders.eu", func() bool { return len(offsets(h.lines(), "orders.eu")) == 2 })
	if err := kf.CreateTopic("orders.us", 1, nil); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	produce(t, kf, "orders.us", jsonPayloads(0, 2)...)
	poll.Until(t, 15*time.Second, "orders.us", func() bool { return len(offsets(h.lines(), "orders.us")) == 2 })
	t.Logf("new topic picked up %s after creation", time.Since(created).Round(time.Millisecond))
	if got := offsets(h.lines(), "other"); len(got) != 0 {
		t.Errorf("consumed the unmatched topic: %v", got)
	}
}

// A sink stopped and started again resumes at the committed offset:
// every record exactly once.
func TestRestartResumes(t *testing.T) {
	kf := cluster(t, "a")
	blocks := "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 5\n"
	h := newHarness(t, kf, blocks, fake(&fakeplugin.Plugin{}))
	produce(t, kf, "a", jsonPayloads(0, 10)...)
	h.start()
	poll.Until(t, 10*time.Second, "commit at 10", func() bool { return committed(t, kf, group, "a")["a"] == 10 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	produce(t, kf, "a", jsonPayloads(10, 7)...)
	h2 := newHarness(t, kf, blocks, fake(h.fake)) // one plugin, so one record of both runs
	h2.start()
	poll.Until(t, 10*time.Second, "commit at 17", func() bool { return committed(t, kf, group, "a")["a"] == 17 })
	if got := offsets(h.lines(), "a"); !slices.Equal(got, seq(0, 17)) {
		t.Errorf("offsets %v, want 0..16 once each", got)
	}
}

// The plugin's host process is killed while batches flow: it is restarted,
// the consumer resumes from the committed offsets, nothing is lost, and
// the only duplicates are whole batches that were in flight at a kill.
func TestHostKilledResumes(t *testing.T) {
	kf := cluster(t, "a")
	const total, batch, kills = 300, 10, 3
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 10\npoll_interval = \"50ms\"\n", host("delay = \"30ms\"\n"))
	produce(t, kf, "a", jsonPayloads(0, total)...)
	h.start()
	for k := 0; k < kills; k++ {
		poll.Until(t, 20*time.Second, "progress", func() bool { return len(h.lines()) >= (k+1)*5 })
		pid := h.proc.Pid()
		if pid == 0 {
			t.Fatal("no child process")
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 20*time.Second, "a new child", func() bool { return h.proc.Pid() != 0 && h.proc.Pid() != pid })
	}
	poll.Until(t, 60*time.Second, "everything committed", func() bool { return committed(t, kf, group, "a")["a"] == total })
	if got := h.proc.Restarts(); got != kills {
		t.Errorf("%d restarts, want %d", got, kills)
	}
	dups := duplicates(t, h.lines(), "a", total)
	// A kill can land after the plugin wrote a batch and before its OK
	// reached the runtime: that batch is delivered again, once.
	if dups > kills*batch {
		t.Errorf("%d duplicate records for %d kills of batches of %d", dups, kills, batch)
	}
	t.Logf("%d duplicate records after %d kills", dups, kills)
	// A death counts as a failed attempt: the batch in flight comes back
	// as attempt 2.
	second := 0
	for _, l := range h.lines() {
		if l.Attempt == 2 {
			second++
		}
	}
	if second < 1 || second > kills {
		t.Errorf("%d batches delivered as attempt 2 after %d kills", second, kills)
	}
	if err := h.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	var got []time.Duration
	for a := 1; a <= 4; a++ {
		got = append(got, pipeline.Backoff(a))
	}
	want := []time.Duration{200 * time.Millisecond, 585 * time.Millisecond, 1710 * time.Millisecond, 5 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("Backoff(1..4) = %v, want %v", got, want)
	}
}

// A second runtime joins the group: the partition it takes is revoked from
// the first, whose buffered records of it are dropped, not delivered and
// not committed; the new owner delivers them. Every record once, and the
// group's offsets at the end.
func TestRevokedPartitionNotCommitted(t *testing.T) {
	kf := cluster(t, "a", "b")
	a := newHarness(t, kf, "[[topics]]\ntopics = [\"a\", \"b\"]\nschema = \"json\"\npoll_interval = \"1h\"\n", fake(&fakeplugin.Plugin{}))
	produce(t, kf, "a", jsonPayloads(0, 5)...)
	produce(t, kf, "b", jsonPayloads(0, 5)...)
	a.start()
	time.Sleep(1500 * time.Millisecond) // both buckets buffered, none due
	if n := len(a.lines()); n != 0 {
		t.Fatalf("%d batches before the rebalance", n)
	}
	b := newHarness(t, kf, "[[topics]]\ntopics = [\"a\", \"b\"]\nschema = \"json\"\npoll_interval = \"100ms\"\n", fake(&fakeplugin.Plugin{}))
	b.start()
	var taken string
	poll.Until(t, 30*time.Second, "the new member to deliver a partition", func() bool {
		for _, l := range b.lines() {
			taken = l.Topic
			return true
		}
		return false
	})
	poll.Until(t, 10*time.Second, "its commit", func() bool { return committed(t, kf, group, taken)[taken] == 5 })
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, h := range []*harness{a, b} {
		for _, l := range h.lines() {
			for _, r := range l.Records {
				count[fmt.Sprintf("%s@%d", l.Topic, r.Offset)]++
			}
		}
	}
	for _, topic := range []string{"a", "b"} {
		for o := range 5 {
			if n := count[fmt.Sprintf("%s@%d", topic, o)]; n != 1 {
				t.Errorf("%s@%d delivered %d times", topic, o, n)
			}
		}
	}
	if got := committed(t, kf, group, "a", "b"); got["a"] != 5 || got["b"] != 5 {
		t.Errorf("committed %v", got)
	}
}
