package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

// A topic deleted under a running picomq-connect, on the real broker. The
// broker answers every fetch of it UNKNOWN_TOPIC_ID at once, and kgo
// fetches again as soon as the loop polls: found when a picomq-connect
// outlived the benchmark that deleted its topic, at 58 % of a core and a
// fetch_error warning every millisecond, for as long as it ran. Now the
// failing partition is paused with a growing backoff: the process is
// nearly idle and the warning comes once (then at most once a minute).
// Then the consumer starts a new session, and the topic made again is
// consumed from its start. (A block with a second topic does not spin
// here: the rebalance drops the deleted one.)
func TestDeletedTopicOnRealBroker(t *testing.T) {
	kafka := services.RequireKafka(t)
	run := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	gone, group := "gone"+run, "fetcherr"+run+"-test"
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.KafkaBrokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close) // after the topic's deletion below: cleanups run last first
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, gone); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), gone) })
	produceJSON := func(topic string, from, n int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"i":%d}`, i)})
		}
		// A client of its own each time: one that knew the deleted
		// topic would produce with its old ID.
		pcl, err := kgo.NewClient(kgo.SeedBrokers(kafka.KafkaBrokers...))
		if err != nil {
			t.Fatal(err)
		}
		defer pcl.Close()
		if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produceJSON(gone, 0, 10)

	defs, records := t.TempDir(), filepath.Join(t.TempDir(), "records.jsonl")
	writeDef(t, filepath.Join(defs, "test.toml"), fmt.Sprintf(`type = "sink"
key = "fetcherr_test"
path = "test/libpicomq_connector_test_a_sink"

[[topics]]
topics = [%q]
schema = "json"
batch_length = 10
poll_interval = "100ms"
consumer_group = %q

[plugin_config]
record_path = %q
`, gone, group, records))
	rt := startConnect(t, kafka.KafkaBrokers, defs)
	waitTopicAtEnd(t, adm, group, gone, 90*time.Second, rt)

	if _, err := adm.DeleteTopics(ctx, gone); err != nil {
		t.Fatal(err)
	}
	logged := func() string { b, _ := os.ReadFile(rt.log); return string(b) }
	poll.Until(t, 20*time.Second, "a fetch_error line for the deleted topic", func() bool {
		return strings.Contains(logged(), "event=fetch_error")
	})
	pid := rt.cmd.Process.Pid
	cpu0, err := hosttest.ProcessCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	cpu1, err := hosttest.ProcessCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Idle, picomq-connect spends about 10 ms a second here (its 100 ms
	// long polls, heartbeats); spinning, it spent 1.7 s of these 3.
	if used := cpu1 - cpu0; used > 600*time.Millisecond {
		t.Errorf("picomq-connect used %s of CPU in 3s with its topic deleted, want at most 600ms", used)
	}
	if n := strings.Count(logged(), "event=fetch_error"); n != 1 {
		t.Errorf("%d fetch_error lines, want 1\n%s", n, rt.tail())
	}

	// The consumer started a new session, which does not fetch the
	// missing topic at all.
	poll.Until(t, 30*time.Second, "a topic_deleted line", func() bool { return strings.Contains(logged(), "event=topic_deleted") })

	// The topic made again is consumed from its start: the broker dropped
	// the deleted topic's committed offsets, and kgo would never fetch the
	// new topic in the old client.
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, gone); err != nil {
		t.Fatal(err)
	}
	produceJSON(gone, 100, 15)
	poll.Until(t, 90*time.Second, "the made-again topic committed to its end", func() bool {
		return committedOffset(t, adm, group, gone) == 15
	})
	if code := rt.stop(); code != 0 || rt.selfExits != 0 {
		t.Fatalf("picomq-connect exit code %d, %d exits by itself\n%s", code, rt.selfExits, rt.tail())
	}
	// What the plugin wrote: both lives of the topic, each record once.
	b, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var line struct {
			Records []struct {
				Payload []byte `json:"payload"` // the test plugin writes bytes
			} `json:"records"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("record file line %q: %v", l, err)
		}
		for _, r := range line.Records {
			got = append(got, string(r.Payload))
		}
	}
	var want []string
	for _, i := range append(seq(0, 10), seq(100, 15)...) {
		want = append(want, fmt.Sprintf(`{"i":%d}`, i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("written %v, want %v", got, want)
	}
}

// seq is n ints from from.
func seq(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}
