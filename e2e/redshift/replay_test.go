package redshift_test

import (
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// crashPoint is a place where the runtime dies during a batch: the
// emulator holds a statement of the load (the statement has reached the
// cluster, its answer has not come back) and the test kills the host
// process meanwhile.
type crashPoint struct {
	name string
	// hold installs the faults and returns whether the crash point has been
	// reached.
	hold func(emu *rsemu.Server) func() bool
	// committed: the crashed chunk may have committed (the COMMIT reached
	// the cluster); otherwise none of the crashed batch may be visible
	// before the replay.
	committed bool
	// orphans is how many files the crash leaves under s3_prefix.
	orphans int
}

// holdTime is how long a held statement waits before it runs (and the
// backend session notices its client is gone and rolls back).
const holdTime = 800 * time.Millisecond

func holdStatement(pattern string) func(emu *rsemu.Server) func() bool {
	return func(emu *rsemu.Server) func() bool {
		h := emu.DelayOn(pattern, holdTime, 1)
		return func() bool { return h.Hits() > 0 }
	}
}

var crashPoints = []crashPoint{
	// The file is in S3, the transaction has begun, COPY has not run.
	{"after upload, before COPY", holdStatement(`^LOCK `), false, 1},
	// COPY has loaded staging inside the transaction.
	{"after COPY, before INSERT", holdStatement(`^INSERT `), false, 1},
	// INSERT has added the rows to the target inside the transaction.
	{"after INSERT, before staging cleanup", holdStatement(`^DELETE `), false, 1},
	// Everything ran; COMMIT reached the cluster, its answer did not come
	// back. The cluster commits it.
	{"COMMIT sent, not acknowledged", holdStatement(`(?i)^commit`), true, 1},
	// The first chunk committed (and its file was deleted); the second is
	// uploaded and its transaction held.
	{"after a committed chunk, mid-batch", func(emu *rsemu.Server) func() bool {
		second := emu.AddFault(rsemu.Fault{Match: regexp.MustCompile(`^LOCK `), Skip: 1, Delay: holdTime})
		return func() bool { return second.Hits() > 0 }
	}, true, 1},
}

// A crash at each step of a chunk's load, followed by the runtime's
// redelivery of the whole batch to a new process, leaves exactly one row
// per record. A crash after the upload leaves an orphan file under
// s3_prefix, as the spec says.
func TestCrashAtEachStepThenReplay(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for i, cp := range crashPoints {
		t.Run(cp.name, func(t *testing.T) {
			t.Parallel()
			w := w.fork(t)
			table := fmt.Sprintf("crash_%d", i)
			prefix := fmt.Sprintf("crash/%d", i)
			cfg := w.config(map[string]any{"target_table": table, "batch_size": 10, "s3_prefix": prefix})
			inst := w.open("crash", cfg)
			consume(t, inst, batch("orders", 0, 10)) // committed earlier
			b := batch("orders", 5, 25)              // overlaps it; three chunks

			held := cp.hold(w.emu)
			done := make(chan error, 1)
			go func() { done <- inst.Consume(b) }()
			deadline := time.Now().Add(20 * time.Second)
			for !held() {
				select {
				case err := <-done:
					t.Fatalf("the batch finished (%v) before the crash point was reached", err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the crash point was never reached")
				}
				time.Sleep(time.Millisecond)
			}
			w.host.Kill()
			var ee *hostclient.ExitError
			if err := <-done; !errors.As(err, &ee) {
				t.Fatalf("consume during the crash: %v, want the host's exit", err)
			}
			if !cp.committed {
				if n := w.count(table); n != 10 {
					t.Fatalf("%d rows visible after the crash, want the earlier batch's 10", n)
				}
			}

			// The runtime restarts and redelivers the batch.
			consume(t, startConnector(t).open("crash", cfg), b)
			w.exactlyOnce(table, "orders", 0, 29)
			if objs := w.objects(prefix + "/"); len(objs) != cp.orphans {
				t.Errorf("files under the prefix after the replay: %v, want %d orphan(s)", objs, cp.orphans)
			}
		})
	}
	// A crash after the whole batch committed, before the runtime committed
	// the offset: the replay changes nothing and leaves no file.
	t.Run("after the batch, before the offset commit", func(t *testing.T) {
		t.Parallel()
		w := w.fork(t)
		cfg := w.config(map[string]any{"target_table": "crash_done", "batch_size": 10, "s3_prefix": "crash/done"})
		b := batch("orders", 0, 25)
		consume(t, w.open("crash", cfg), b)
		before := fmt.Sprint(w.rows("crash_done"))
		w.host.Kill()
		consume(t, startConnector(t).open("crash", cfg), b)
		if after := fmt.Sprint(w.rows("crash_done")); after != before {
			t.Fatalf("the replay changed the table:\nbefore %s\nafter  %s", before, after)
		}
		w.exactlyOnce("crash_done", "orders", 0, 24)
		if objs := w.objects("crash/done/"); len(objs) != 0 {
			t.Errorf("files left: %v", objs)
		}
	})
}
