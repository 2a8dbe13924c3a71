package delta_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTenThousandVersions drives one table to 10,000 versions through the
// real library, one small batch per version, as a quiet topic with a short
// poll_interval would: checkpoints appear at the interval (coalesced ones
// skipped, never off-interval), delta-rs opens the table from them and
// reads every record once, and a new sink instance opens it from the
// newest checkpoint and carries on. The latency, memory and open-time
// figures at 100/1,000/10,000 versions come from `go run ./tools/deltascale`.
func TestTenThousandVersions(t *testing.T) {
	const versions, per = 10000, 2
	dir := filepath.Join(t.TempDir(), "events")
	uri := fileURI(dir)
	py(t, createEvents, uri)
	h := newHarness(t)
	inst := h.open("scale", map[string]any{"table_uri": uri})
	start := time.Now()
	for v := range versions - 1 { // version 0 is the table's creation
		consume(t, inst, events("scale", v*per, per))
	}
	elapsed := time.Since(start)
	// Checkpoints run behind the commits (due versions coalesce while one
	// is written); the last due one, 9990, must get written.
	var m string
	var metrics struct {
		Sink map[string]float64 `json:"sink"`
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if m, err = inst.Metrics(); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(m), &metrics); err != nil {
			t.Fatal(err)
		}
		if metrics.Sink["last_checkpoint_version"] >= versions-10 || time.Now().After(deadline) {
			break
		}
	}
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	cps := checkpointVersions(t, dir)
	if len(cps) == 0 || cps[len(cps)-1] != versions-10 {
		t.Fatalf("checkpoints %v: the newest should be at version %d (metrics %s)", cps, versions-10, m)
	}
	for _, v := range cps {
		if v%10 != 0 {
			t.Fatalf("checkpoint at version %d is off the interval of 10", v)
		}
	}
	if metrics.Sink["checkpoint_failures"] != 0 || metrics.Sink["commits"] != versions-1 {
		t.Fatalf("metrics %s", m)
	}
	out := py(t, `
dt = DeltaTable(uri)
ids = dt.to_pyarrow_table(columns=["id"]).column("id").to_pylist()
dump({"version": dt.version(), "rows": len(ids), "distinct": len(set(ids)), "max": max(ids)})
`, uri)
	want := `{"distinct": 19998, "max": 19997, "rows": 19998, "version": 9999}`
	if strings.TrimSpace(out) != want {
		t.Fatalf("delta-rs reads %s, want %s", out, want)
	}
	// A new instance starts from the newest checkpoint and keeps exactly-once.
	again := newHarness(t).open("scale", map[string]any{"table_uri": uri})
	consume(t, again, events("scale", (versions-2)*per, per)) // the last batch, replayed
	consume(t, again, events("scale", (versions-1)*per, per))
	if n := len(history(t, uri)); n < 1 {
		t.Fatal("no history")
	}
	t.Logf("%d versions in %v (%.0f commits/s), %d checkpoints written, newest at %d",
		versions, elapsed.Round(time.Millisecond), float64(versions-1)/elapsed.Seconds(), len(cps), cps[len(cps)-1])
}
