package audit_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/audit"
)

// fakeBroker holds topic "a" (two partitions of 4 records, all committed)
// and a dead-letter topic shared with another block's topic.
type fakeBroker struct{ fakeLog }

func (fakeBroker) Partitions(_ context.Context, topics []string) ([]audit.TP, error) {
	var out []audit.TP
	for _, t := range topics {
		if t == "a" {
			out = append(out, audit.TP{Topic: "a", Partition: 1}, audit.TP{Topic: "a", Partition: 0})
		}
	}
	return out, nil
}

func (fakeBroker) Offsets(_ context.Context, _ string, tps []audit.TP) (map[audit.TP]audit.Offsets, error) {
	out := map[audit.TP]audit.Offsets{}
	for _, tp := range tps {
		out[tp] = audit.Offsets{LogStart: 0, End: 4, Committed: 4}
	}
	return out, nil
}

func (fakeBroker) DeadLetters(_ context.Context, topic string, fn func(audit.TP, int64, int)) (int64, error) {
	if topic != "dlq" {
		return 0, nil
	}
	fn(audit.TP{Topic: "a", Partition: 1}, 2, 0)
	fn(audit.TP{Topic: "other", Partition: 0}, 9, 0)
	return 1, nil
}

type fakeDest map[audit.TP]*audit.Written

func (d fakeDest) Scan(context.Context, []audit.TP) (map[audit.TP]*audit.Written, []string, error) {
	return d, []string{"dest note"}, nil
}

// Run reads each block's partitions, offsets and dead letters, counts
// only the dead letters of its own partitions, and reports in topic and
// partition order with every note.
func TestRun(t *testing.T) {
	b := fakeBroker{full(0, 4)}
	dest := fakeDest{
		{Topic: "a", Partition: 0}: rows(0, 1, 2, 3),
		{Topic: "a", Partition: 1}: rows(0, 1, 3),
	}
	rep, err := audit.Run(context.Background(), audit.Sink{Key: "k", Plugin: "delta", Dest: dest, Blocks: []audit.Block{{
		Broker: b, Group: "g", Topics: []string{"a", "gone"},
		DeadLetters: func(string) string { return "dlq" },
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Partitions) != 2 || rep.Partitions[0].Partition != 0 || rep.Partitions[1].DeadLetter != 1 {
		t.Fatalf("%+v", rep.Partitions)
	}
	for _, p := range rep.Partitions {
		if !p.Clean() {
			t.Errorf("%+v", p)
		}
	}
	notes := strings.Join(rep.Notes, "\n")
	if !slices.ContainsFunc(rep.Unaudited, func(s string) bool { return strings.Contains(s, "topic gone does not exist") }) {
		t.Errorf("unaudited %q", rep.Unaudited)
	}
	for _, want := range []string{"dest note", "1 record(s) whose pico_source_* or pico_redrive_attempts headers cannot be read", "1 record(s) of partitions this block does not consume"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
}

// offsetsBroker is fakeBroker with other offsets.
type offsetsBroker struct {
	fakeBroker
	off audit.Offsets
}

func (b offsetsBroker) Offsets(_ context.Context, _ string, tps []audit.TP) (map[audit.TP]audit.Offsets, error) {
	out := map[audit.TP]audit.Offsets{}
	for _, tp := range tps {
		out[tp] = b.off
	}
	return out, nil
}

// A block whose topic is gone, or a partition whose group committed
// nothing (or committed below the log start) while the table or the
// dead-letter topic holds offsets of it, audited nothing: the report is
// not clean.
func TestRunNothingAudited(t *testing.T) {
	dest := fakeDest{{Topic: "a", Partition: 0}: rows(0, 1, 2, 3)}
	for _, c := range []struct {
		name   string
		broker audit.Broker
		topics []string
		dlq    func(string) string
		want   string
	}{
		{"topic gone", fakeBroker{full(0, 4)}, []string{"gone"}, nil, "topic gone does not exist on the broker"},
		{"no commit, rows", offsetsBroker{fakeBroker{full(0, 4)}, audit.Offsets{LogStart: 0, End: 4, Committed: -1}}, []string{"a"}, nil,
			"a[0]: group g has no committed offset"},
		{"no commit, dead letter", offsetsBroker{fakeBroker{full(0, 4)}, audit.Offsets{LogStart: 0, End: 4, Committed: -1}}, []string{"a"},
			func(string) string { return "dlq" }, "a[1]: group g has no committed offset"},
		{"committed below log start", offsetsBroker{fakeBroker{full(0, 4)}, audit.Offsets{LogStart: 3, End: 4, Committed: 2}}, []string{"a"}, nil,
			"a[0]: group g committed offset 2, below the log start 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := audit.Report{}
			sr, err := audit.Run(context.Background(), audit.Sink{Key: "k", Plugin: "delta", Dest: dest, Blocks: []audit.Block{{
				Broker: c.broker, Group: "g", Topics: c.topics, DeadLetters: c.dlq,
			}}})
			if err != nil {
				t.Fatal(err)
			}
			rep.Sinks = append(rep.Sinks, sr)
			rep.Finish()
			if rep.Clean || rep.Unaudited == 0 || !slices.ContainsFunc(sr.Unaudited, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Fatalf("clean %v, unaudited %q, want %q", rep.Clean, sr.Unaudited, c.want)
			}
			var b strings.Builder
			if err := audit.WriteText(&b, &rep); err != nil || !strings.Contains(b.String(), "NOTHING AUDITED") {
				t.Fatalf("%v\n%s", err, b.String())
			}
		})
	}
	// Nothing anywhere and no commit: nothing consumed, nothing to audit.
	empty := offsetsBroker{fakeBroker{full(0, 4)}, audit.Offsets{LogStart: 0, End: 4, Committed: -1}}
	sr, err := audit.Run(context.Background(), audit.Sink{Key: "k", Plugin: "delta", Dest: fakeDest{}, Blocks: []audit.Block{{
		Broker: empty, Group: "g", Topics: []string{"a"}}}})
	if err != nil || len(sr.Unaudited) != 0 {
		t.Fatalf("%v %q", err, sr.Unaudited)
	}
}
