package delta_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

const createEvents = deltatest.CreateEvents

func events(topic string, first, n int) hostclient.Batch { return deltatest.Events(topic, first, n) }

func ids(t *testing.T, uri string) []int { t.Helper(); return deltatest.IDs(t, uri) }

func wantIDs(t *testing.T, uri string, want string) { t.Helper(); deltatest.WantIDs(t, uri, want) }

func span(from, to int) string { return deltatest.Span(from, to) }

func TestReplayAfterCrashAddsNothing(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri)
	cfg := map[string]any{"table_uri": uri}

	// The sink commits, then the runtime dies before committing the offset.
	h := newHarness(t)
	consume(t, h.open("ev", cfg), events("events", 0, 10))
	h.host.Kill()

	// A new runtime (new process, new instance) redelivers the same batch,
	// then a re-batched one that overlaps it, then new records.
	h2 := newHarness(t)
	inst := h2.open("ev", cfg)
	consume(t, inst, events("events", 0, 10))
	consume(t, inst, events("events", 5, 10)) // offsets 5..14: 10..14 are new
	consume(t, inst, events("events", 15, 5))
	wantIDs(t, uri, span(0, 19))
	if n := len(history(t, uri)); n != 4 { // create + 3 commits with new records
		t.Fatalf("%d versions, want 4", n)
	}
	m, _ := inst.Metrics()
	if !strings.Contains(m, `"records_skipped":15`) || !strings.Contains(m, `"records_written":10`) {
		t.Fatalf("metrics %s", m)
	}
	var sawSkip bool
	for _, l := range inst.Logs() {
		if strings.Contains(l.Message, "skipping records already committed") && strings.Contains(l.Message, "skipped=10 remaining=0") {
			sawSkip = true
		}
	}
	if !sawSkip {
		t.Fatalf("no skip log line: %v", inst.Logs())
	}
}

func TestExactlyOnceOffAppendsReplaysAgain(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri)
	inst := newHarness(t).open("ev", map[string]any{"table_uri": uri, "exactly_once": false})
	consume(t, inst, events("events", 0, 3))
	consume(t, inst, events("events", 0, 3))
	wantIDs(t, uri, "0,0,1,1,2,2")
	// No txn action is written without exactly-once.
	out := py(t, `
import glob
print(sum(1 for f in glob.glob(sys.argv[1] + "/_delta_log/*.json") for line in open(f) if '"txn"' in line))
`, strings.TrimPrefix(uri, "file://"))
	if strings.TrimSpace(out) != "0" {
		t.Fatalf("%s txn actions", out)
	}
}

func TestTemplatedTableURIs(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"eu", "us"} {
		py(t, createEvents, fileURI(filepath.Join(root, name)))
	}
	inst := newHarness(t).open("ev", map[string]any{"table_uri": fileURI(root) + "/{topic_segment[-1]}"})
	consume(t, inst, events("orders.eu", 0, 2))
	consume(t, inst, events("orders.us", 0, 3))
	consume(t, inst, events("orders.eu", 2, 1))
	wantIDs(t, fileURI(filepath.Join(root, "eu")), "0,1,2")
	wantIDs(t, fileURI(filepath.Join(root, "us")), "0,1,2")
	err := inst.Consume(events("orders.missing", 0, 1))
	wantStatus(t, err, hostclient.StatusRetry, "Failed to load Delta table "+fileURI(root)+"/missing")
}
