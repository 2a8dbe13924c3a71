package connect_test

import (
	"bufio"
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

	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

// max_in_flight through the built binaries: picomq-connect against the
// real Apache Kafka broker, the e2e test plugin (declaring
// concurrent_consume) in a picomq-host child, a topic of four partitions.
// Batches of several partitions are in the plugin at once (the plugin
// records how many calls ran when each began), every record is written
// once, each partition in offset order, and the group's offsets reach the
// end. The child gets a host thread per batch in flight plus one.
func TestMaxInFlightOnRealBroker(t *testing.T) {
	const parts, per = 4, 100
	lines, log := runInFlight(t, "max_in_flight = 4\n", parts, per)
	// connectProc runs --workers 2: raised to 4 batches in flight + 1.
	if !strings.Contains(log, "event=host_workers") || !strings.Contains(log, "workers=5") {
		t.Errorf("no host_workers line raising the child to 5 threads:\n%s", log)
	}
	most := 0
	for _, l := range lines {
		most = max(most, l.Running)
		if l.Follows != nil {
			t.Errorf("batch of partition %d at %d follows %d without max_in_flight_per_partition", l.Partition, l.Records[0].Offset, *l.Follows)
		}
	}
	if most < 2 || most > 4 {
		t.Errorf("at most %d consume calls ran at once, want 2 to 4 (max_in_flight 4)", most)
	}
	t.Logf("%d batches, up to %d in the plugin at once", len(lines), most)
}

// Pipelined batches (max_in_flight_per_partition) through the built
// binaries and the real broker, with the test plugin declaring pipelined
// (it waits for the predecessor's answer, the SDK's Batch.Pred, before it
// writes): batches of one partition are in the plugin at once, each
// follower's follows is the range_last of the batch written before it, some
// reached the sink with that batch unanswered (the SDK's Pred), and every
// record is written once, in order.
func TestPipelinedOnRealBroker(t *testing.T) {
	t.Setenv("PICOMQ_TEST_PLUGIN_PIPELINED", "1")
	const parts, per = 2, 200
	lines, log := runInFlight(t, "max_in_flight = 6\nmax_in_flight_per_partition = 3\n", parts, per)
	if strings.Contains(log, "max_in_flight_per_partition_unused") {
		t.Error("warned that max_in_flight_per_partition is unused, though the plugin declares pipelined")
	}
	followers, overlapped, most := 0, 0, 0
	prev := map[uint32]uint64{} // range_last of each partition's batch written before
	for _, l := range lines {
		most = max(most, l.Running)
		if l.Pred != nil && (l.Follows == nil || *l.Pred != *l.Follows) {
			t.Errorf("batch of partition %d at %d: the SDK's Pred ends at %d, follows %v", l.Partition, l.Records[0].Offset, *l.Pred, l.Follows)
		}
		if l.Follows != nil {
			followers++
			if l.Pred != nil {
				overlapped++ // its predecessor was unanswered when it reached the sink
			}
			if p, ok := prev[l.Partition]; !ok || p != *l.Follows {
				t.Errorf("batch of partition %d at %d follows %d, the batch written before it ended at %d", l.Partition, l.Records[0].Offset, *l.Follows, p)
			}
		}
		prev[l.Partition] = l.RangeLast
	}
	if overlapped == 0 || most < 3 {
		t.Errorf("%d batches followed one the sink had not answered, at most %d in the plugin at once: want pipelining (3 per partition)", overlapped, most)
	}
	t.Logf("%d batches, %d sent with follows, %d reaching the sink before the one before them was answered, up to %d in the plugin at once",
		len(lines), followers, overlapped, most)
}

// inFlightLine is one line of the test plugin's record file.
type inFlightLine struct {
	Partition uint32  `json:"partition"`
	Running   int     `json:"running"`
	RangeLast uint64  `json:"range_last"`
	Follows   *uint64 `json:"follows"`
	Pred      *uint64 `json:"pred"`
	Records   []struct {
		Offset uint64 `json:"offset"`
	} `json:"records"`
}

// runInFlight produces per records to each of parts partitions of a new
// topic, runs picomq-connect on one block of the test plugin (declaring
// concurrent_consume; batches of 20, a 150 ms consume) with topicExtra in
// the block until the group's offsets reach the ends, checks that every
// record was written once, each partition in offset order, and that the
// plugin was not said to serialise, and returns the plugin's record lines
// in the order written and the runtime's log.
func runInFlight(t *testing.T, topicExtra string, parts int32, per int) ([]inFlightLine, string) {
	t.Helper()
	kafka := services.RequireKafka(t)
	t.Setenv("PICOMQ_TEST_PLUGIN_CONCURRENT", "1") // picomq-connect and its child inherit it
	run := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	topic, group := "inflight"+run, "inflight"+run+"-test"

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.KafkaBrokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close) // after the topic's deletion below: cleanups run last first
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), topic) })
	var recs []*kgo.Record
	for p := range parts {
		for i := range per {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, `{"p":%d,"i":%d}`, p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	defs, out := t.TempDir(), t.TempDir()
	records := filepath.Join(out, "records.jsonl")
	writeDef(t, filepath.Join(defs, "test.toml"), fmt.Sprintf(`type = "sink"
key = "inflight_test"
path = "test/libpicomq_connector_test_a_sink"

[[topics]]
topics = [%q]
schema = "json"
batch_length = 20
poll_interval = "100ms"
consumer_group = %q
%s
[plugin_config]
record_path = %q
delay = "150ms"
`, topic, group, topicExtra, records))
	rt := startConnect(t, kafka.KafkaBrokers, defs)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	waitGroupAtEnds(t, adm, group, ends, 90*time.Second, rt)
	if code := rt.stop(); code != 0 || rt.selfExits != 0 {
		t.Fatalf("picomq-connect exit code %d, %d exits by itself\n%s", code, rt.selfExits, rt.tail())
	}
	log, _ := os.ReadFile(rt.log)
	if strings.Contains(string(log), "max_in_flight_serialised") {
		t.Errorf("warned that the plugin serialises, though it declares concurrent_consume")
	}

	f, err := os.Open(records)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []inFlightLine
	got := map[uint32][]uint64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l inFlightLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
		for _, r := range l.Records {
			got[l.Partition] = append(got[l.Partition], r.Offset)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for p := range uint32(parts) {
		want := make([]uint64, per)
		for i := range want {
			want[i] = uint64(i)
		}
		if !slices.Equal(got[p], want) {
			t.Errorf("partition %d written %v, want offsets 0..%d once each, in order", p, got[p], per-1)
		}
	}
	return lines, string(log)
}
