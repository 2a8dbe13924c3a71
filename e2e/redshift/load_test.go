package redshift_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
)

// describe() through the C ABI with a 64-byte buffer: BUFFER_TOO_SMALL,
// then the document on the second call. (What the document says is the
// suite's Describe.)
func TestDescribeGrowsItsBuffer(t *testing.T) {
	t.Parallel()
	c := startConnector(t)
	var calls int
	doc, err := c.lib.Describe(hosttest.OutCap(64), hosttest.CallCount(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("describe called %d times with a 64-byte buffer, want 2 (BUFFER_TOO_SMALL, then the document)", calls)
	}
	if !json.Valid([]byte(doc)) || !strings.Contains(doc, `"name":"redshift_sink"`) {
		t.Errorf("document: %s", doc)
	}
}

// Template "{topic}" with topics "orders" and "staging_orders": the second
// topic's table is the first one's staging twin. Whatever the sink does
// about the clash (refuse one of the two names, say), a batch it
// acknowledged must stay in its own table and no table may receive another
// topic's records. Both orders of first delivery are tried.
func TestTopicTableThatIsAnotherTopicsStagingTwin(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for i, topics := range [][]string{
		{"staging_c0_orders", "c0_orders"},
		{"c1_orders", "staging_c1_orders", "c1_orders"},
	} {
		inst := w.open(fmt.Sprintf("clash%d", i), w.config(map[string]any{"target_table": "{topic}", "s3_prefix": fmt.Sprintf("c%d", i)}))
		acked := map[string]bool{}
		var results []string
		for n, topic := range topics { // the table is the topic's name
			err := inst.Consume(batch(topic, uint64(10*n), 3))
			results = append(results, fmt.Sprintf("%s: %v", topic, err))
			if err == nil {
				acked[topic] = true
			}
		}
		if len(acked) == 0 {
			t.Fatalf("neither topic could be loaded: %q", results)
		}
		for n, topic := range topics {
			if strings.HasPrefix(topic, "staging_") && (acked[topic] || !strings.Contains(results[n], `starts with "staging_"`)) {
				t.Errorf("a topic whose table would be another table's staging twin must fail: %s", results[n])
			}
		}
		for _, table := range slices.Compact(slices.Sorted(slices.Values(topics))) {
			var n int
			if err := w.pg.QueryRow(w.ctx, `SELECT count(*) FROM pg_class WHERE relname = $1`, table).Scan(&n); err != nil || n == 0 {
				continue
			}
			for _, r := range w.rows(table) {
				if id := r["id"].(string); !strings.HasPrefix(id, table+":") {
					t.Errorf("table %s holds a record of another topic: %s (deliveries: %q)", table, id, results)
				}
			}
		}
		for n, topic := range topics {
			if !acked[topic] {
				continue
			}
			have := map[string]bool{}
			for _, r := range w.rows(topic) {
				have[r["id"].(string)] = true
			}
			for off := 10 * n; off < 10*n+3; off++ {
				if id := fmt.Sprintf("%s:0:%d", topic, off); !have[id] {
					t.Errorf("%s was acknowledged but is gone from table %s (deliveries: %q)", id, topic, results)
				}
			}
		}
	}
}
