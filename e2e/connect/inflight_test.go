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
	kafka := services.RequireKafka(t)
	t.Setenv("PICOMQ_TEST_PLUGIN_CONCURRENT", "1") // picomq-connect and its child inherit it
	run := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	topic, group := "inflight"+run, "inflight"+run+"-test"
	const parts, per = 4, 100

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.KafkaBrokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), topic) })
	var recs []*kgo.Record
	for p := range int32(parts) {
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
max_in_flight = 4

[plugin_config]
record_path = %q
delay = "150ms"
`, topic, group, records))
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
	// connectProc runs --workers 2: raised to 4 batches in flight + 1.
	if !strings.Contains(string(log), "event=host_workers") || !strings.Contains(string(log), "workers=5") {
		t.Errorf("no host_workers line raising the child to 5 threads:\n%s", log)
	}
	if strings.Contains(string(log), "max_in_flight_serialised") {
		t.Errorf("warned that the plugin serialises, though it declares concurrent_consume")
	}

	f, err := os.Open(records)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[uint32][]uint64{}
	most, batches := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l struct {
			Partition uint32 `json:"partition"`
			Running   int    `json:"running"`
			Records   []struct {
				Offset uint64 `json:"offset"`
			} `json:"records"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		most = max(most, l.Running)
		batches++
		for _, r := range l.Records {
			got[l.Partition] = append(got[l.Partition], r.Offset)
		}
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
	if most < 2 || most > 4 {
		t.Errorf("at most %d consume calls ran at once, want 2 to 4 (max_in_flight 4)", most)
	}
	t.Logf("%d batches, up to %d in the plugin at once", batches, most)
}
