package redshift_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

// lastCommits returns metrics()'s "last_commits" of an instance.
func lastCommits(t *testing.T, h uint64) []sdk.Commit {
	t.Helper()
	raw, err := sdk.Metrics(h)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		LastCommits []sdk.Commit `json:"last_commits"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.LastCommits == nil {
		t.Fatalf("last_commits: %v: %s", err, raw)
	}
	return m.LastCommits
}

var copyFrom = regexp.MustCompile(`(?s)^COPY .* FROM '([^']+)'`)

// The newest load per table is the last COPY the server received, with the
// rows its INSERT added: 5 for the last chunk of 25 records, 0 when the
// replay loads it again.
func TestLastCommitIsTheLastLoad(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("lastc", r.config(map[string]any{"target_table": "lastc_{topic}", "batch_size": 10}))
	if got := lastCommits(t, h); len(got) != 0 {
		t.Fatalf("last_commits before any load: %+v", got)
	}
	lastCopy := func() string {
		var url string
		for _, s := range r.emu.Statements() {
			if m := copyFrom.FindStringSubmatch(s); m != nil {
				url = m[1]
			}
		}
		return url
	}
	for i, want := range []int64{5, 0} { // the batch, then its replay
		before := time.Now().UTC()
		mustConsume(t, h, batch("orders", 0, 25))
		got := lastCommits(t, h)
		if len(got) != 1 || got[0].Table != "lastc_orders" || got[0].Version != nil || got[0].Records != want ||
			got[0].Load == "" || got[0].Load != lastCopy() || got[0].Time.Before(before) {
			t.Errorf("round %d: last_commits %+v, want table lastc_orders, load %s (the last COPY), %d records", i, got, lastCopy(), want)
		}
	}
	if _, n := r.ids("lastc_orders"); n != 25 {
		t.Errorf("%d rows, want 25", n)
	}
}
