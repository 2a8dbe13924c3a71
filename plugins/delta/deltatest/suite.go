package deltatest

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/picomq/heavy-sinks/shared/testenv/sinkdriver"
)

// Tests is the suite, in the order Run runs it.
var Tests = []struct {
	Name string
	Run  func(t *testing.T, d sinkdriver.Driver)
}{
	{"TopicsAndPartitionsAreTrackedSeparately", TopicsAndPartitionsAreTrackedSeparately},
}

// Run runs every test of the suite through d, each as a parallel subtest.
func Run(t *testing.T, d sinkdriver.Driver) {
	for _, tc := range Tests {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			tc.Run(t, d)
		})
	}
}

// Open opens an instance (named after its key) and closes it at the end of
// the test.
func Open(t *testing.T, rt sinkdriver.Runtime, key string, cfg map[string]any) sinkdriver.Instance {
	t.Helper()
	inst, err := rt.Open(sinkdriver.Definition{Key: key, Name: key, Config: cfg})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = inst.Close() })
	return inst
}

// JSONBatch builds a batch of JSON records with consecutive offsets.
func JSONBatch(topic string, first uint64, payloads ...string) sinkdriver.Batch {
	b := sinkdriver.Batch{Attempt: 1, Topic: topic, Schema: "json"}
	for i, p := range payloads {
		b.Records = append(b.Records, sinkdriver.Record{Offset: first + uint64(i), TimestampMs: 1767225600000 + int64(i), Payload: []byte(p)})
	}
	return b
}

// Events is n records of the events table from offset (and id) first.
func Events(topic string, first, n int) sinkdriver.Batch {
	var p []string
	for i := first; i < first+n; i++ {
		p = append(p, fmt.Sprintf(`{"id":%d,"body":"event %d"}`, i, i))
	}
	return JSONBatch(topic, uint64(first), p...)
}

func consume(t *testing.T, inst sinkdriver.Instance, b sinkdriver.Batch) {
	t.Helper()
	if err := inst.Consume(b); err != nil {
		t.Fatalf("consume %s offsets %d..: %v", b.Topic, b.Records[0].Offset, err)
	}
}

// TopicsAndPartitionsAreTrackedSeparately: the same offsets of another
// topic are not a replay.
func TopicsAndPartitionsAreTrackedSeparately(t *testing.T, d sinkdriver.Driver) {
	uri := "file://" + filepath.Join(t.TempDir(), "events")
	Py(t, CreateEvents, uri)
	inst := Open(t, d.Start(t), "ev", map[string]any{"table_uri": uri})
	consume(t, inst, Events("a", 0, 3))
	b := Events("b", 0, 3) // same offsets, other topic: not a replay
	for i := range b.Records {
		b.Records[i].Payload = []byte(fmt.Sprintf(`{"id":%d}`, 100+i))
	}
	consume(t, inst, b)
	WantIDs(t, uri, "0,1,2,100,101,102")
}
