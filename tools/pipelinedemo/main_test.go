package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

// buildConnect builds cmd/picomq-connect from this tree, so the demo runs
// the runtime's current source, not whatever dist/ holds.
func buildConnect(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "picomq-connect")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/picomq/heavy-sinks/cmd/picomq-connect").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func runDemo(t *testing.T, redshift string) *Result {
	t.Helper()
	testenv.Library(t, "libpicomq_connector_delta_sink.so") // a clear failure when dist/ is missing
	var out, log bytes.Buffer
	res, err := Run(context.Background(), Options{Connect: buildConnect(t), Records: 300, Redshift: redshift, Out: &out, Log: &log})
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("%v\npicomq-connect log:\n%s", err, log.String())
	}
	if res.ExitCode != 0 {
		t.Errorf("picomq-connect exit code %d, want 0\n%s", res.ExitCode, log.String())
	}
	if got := res.Produced; got["orders.eu"] != 301 || got["orders.us"] != 300 {
		t.Errorf("produced %v, want orders.eu 301 (one not JSON), orders.us 300", got)
	}
	for g, offs := range res.Committed {
		for topic, at := range offs {
			if at != int64(res.Produced[topic]) {
				t.Errorf("group %s committed %s at %d, want the end offset %d", g, topic, at, res.Produced[topic])
			}
		}
	}
	if res.DeltaRows["eu"] != 300 || res.DeltaRows["us"] != 300 {
		t.Errorf("delta-rs read %v, want 300 rows per table", res.DeltaRows)
	}
	return res
}

// The demo's Delta half: the example definition, unchanged, through the
// built runtime; every good record in its table once, the bad one in the
// dead-letter topic, offsets committed to the end.
func TestDemoDelta(t *testing.T) {
	res := runDemo(t, "off")
	if res.RSRows != nil {
		t.Errorf("Redshift half ran with -redshift off: %v", res.RSRows)
	}
	if res.DeadLetters != 1 {
		t.Errorf("%d dead letters, want 1", res.DeadLetters)
	}
}

// Both halves, with the Redshift emulator in front of the services.
func TestDemoBoth(t *testing.T) {
	services.Require(t)
	res := runDemo(t, "on")
	if res.RSRows["orders_eu"] != 300 || res.RSRows["orders_us"] != 300 {
		t.Errorf("Redshift rows %v, want 300 per table", res.RSRows)
	}
	if res.DeadLetters != 2 {
		t.Errorf("%d dead letters, want 2 (one per sink)", res.DeadLetters)
	}
	if len(res.Committed) != 2 {
		t.Errorf("committed offsets of %d groups, want 2", len(res.Committed))
	}
}
