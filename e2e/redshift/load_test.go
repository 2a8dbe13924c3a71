package redshift_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostdriver"
)

// describe() of the library lists every key of the spec's configuration
// table with its type, default and required flag, and flags the secrets.
func TestDescribe(t *testing.T) {
	t.Parallel()
	c := startConnector(t)
	var calls int
	doc, err := c.lib.Describe(hostdriver.OutCap(64), hostdriver.CallCount(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("describe called %d times with a 64-byte buffer, want 2 (BUFFER_TOO_SMALL, then the document)", calls)
	}
	var d struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		ABIVersion string `json:"abi_version"`
		Config     []struct {
			Key      string  `json:"key"`
			Type     string  `json:"type"`
			Default  *string `json:"default"`
			Required bool    `json:"required"`
			Secret   bool    `json:"secret"`
		} `json:"plugin_config"`
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if d.Name != "redshift_sink" || d.ABIVersion != "1.1" || d.Version == "" {
		t.Errorf("name %q abi %q version %q", d.Name, d.ABIVersion, d.Version)
	}
	// key, type, default ("-" for none), required, secret
	want := []string{
		"connection_string string - required secret",
		"target_table template - required -",
		"aws_iam_role string - required -",
		"s3_bucket string - required -",
		"s3_prefix string - required -",
		"aws_region string - required -",
		"s3_endpoint string - - -",
		"aws_access_key_id string - - secret",
		"aws_secret_access_key string - - secret",
		"batch_size int 100 - -",
		"max_connections int 5 - -",
		"include_metadata bool true - -",
		"include_key bool true - -",
		"payload_format string varbyte - -",
		"max_retries int 3 - -",
		"retry_delay string 1s - -",
		"statement_timeout duration 10m - -",
		"auth string password - -",
		"iam_cluster_identifier string - - -",
		"iam_workgroup_name string - - -",
		"iam_db_user string - - -",
		"iam_region string - - -",
		"iam_duration duration 15m - -",
		"archive bool false - -",
		"verbose_logging bool false - -",
	}
	var got []string
	for _, f := range d.Config {
		def, req, sec := "-", "-", "-"
		if f.Default != nil {
			def = *f.Default
		}
		if f.Required {
			req = "required"
		}
		if f.Secret {
			sec = "secret"
		}
		got = append(got, strings.Join([]string{f.Key, f.Type, def, req, sec}, " "))
	}
	if !slices.Equal(got, want) {
		t.Errorf("describe config:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if bytes.Contains([]byte(doc), []byte("REDACTED")) {
		t.Errorf("describe carries values: %s", doc)
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
