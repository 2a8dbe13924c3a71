package deltatest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// redriveBatch is a redrive batch (ABI 1.4) of topic t partition 0: ids at
// original offsets, read from dead-letter partition t.dlq/1 at dlqOffsets.
func redriveBatch(offsets, ids, dlqOffsets []int) sinkdriver.Batch {
	b := sinkdriver.Batch{Attempt: 1, Topic: "t", Schema: "json", AcceptRejections: true,
		Redrive: &hostclient.Redrive{Topic: "t.dlq", Partition: 1}}
	for i := range offsets {
		b.Records = append(b.Records, sinkdriver.Record{Offset: uint64(offsets[i]), Payload: fmt.Appendf(nil, `{"id":%d,"body":"redriven"}`, ids[i])})
		b.Redrive.Offsets = append(b.Redrive.Offsets, uint64(dlqOffsets[i]))
	}
	return b
}

// RedriveIsWrittenOnce: dead letters put back (original offsets 3 and 7,
// below the txn of their partition, which a plain replay would skip) are
// written under a txn of their dead-letter partition; the same redrive
// again writes nothing, a redrive that overlaps it writes only what is
// new, and the partition's own txn does not move. Without exactly_once a
// redrive is refused FATAL: nothing could tell a second run from the first;
// with write_mode = "upsert" too: it would apply an old change over newer ones.
func RedriveIsWrittenOnce(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	rt := d.Start(t, s.Secrets...)
	inst := Open(t, rt, "rd", s.Config(uri))
	if err := inst.Consume(JSONBatch("t", 0, strings.Split(eventsPayloads(0, 9), "\n")...)); err != nil {
		t.Fatal(err)
	}
	first := redriveBatch([]int{3, 7}, []int{103, 107}, []int{4, 9})
	if err := inst.Consume(first); err != nil {
		t.Fatal(err)
	}
	s.WantIDs(uri, Span(0, 9)+",103,107")
	versions := len(s.History(uri))
	if err := inst.Consume(redriveBatch([]int{3, 7}, []int{103, 107}, []int{4, 9})); err != nil {
		t.Fatal(err)
	}
	if n := len(s.History(uri)); n != versions {
		t.Errorf("%d versions after the second redrive, want %d", n, versions)
	}
	if err := inst.Consume(redriveBatch([]int{7, 8}, []int{107, 108}, []int{9, 12})); err != nil {
		t.Fatal(err)
	}
	s.WantIDs(uri, Span(0, 9)+",103,107,108")
	s.WantTxns(uri, map[string]int{
		appID("rd", "t", 0): 9,
		"picomq-delta-sink/rd/redrive/" + url.PathEscape("t.dlq") + "/1": 12,
	})

	plain := Open(t, rt, "rd_plain", s.Config(uri, "exactly_once", false))
	err := plain.Consume(redriveBatch([]int{1}, []int{201}, []int{20}))
	if hostclient.CodeOf(err) != hostclient.StatusFatal || !strings.Contains(fmt.Sprint(err), "exactly_once = true") {
		t.Fatalf("redrive without exactly_once: %v, want FATAL naming exactly_once", err)
	}
	s.WantIDs(uri, Span(0, 9)+",103,107,108")

	// Upserts: a dead letter is older than the changes of its partition
	// applied since; putting it back would undo them. Refused FATAL, the
	// table unchanged.
	up := Open(t, rt, "rd_upsert", s.Config(uri, "write_mode", "upsert", "key_columns", "id"))
	change := redriveBatch([]int{2}, []int{2}, []int{21})
	change.Records[0].Payload = []byte(`{"id":2,"body":"old change","_op":"u"}`)
	err = up.Consume(change)
	if hostclient.CodeOf(err) != hostclient.StatusFatal || !strings.Contains(fmt.Sprint(err), "write_mode = \"upsert\"") {
		t.Fatalf("redrive in upsert mode: %v, want FATAL naming write_mode", err)
	}
	s.WantIDs(uri, Span(0, 9)+",103,107,108")
}

// eventsPayloads is the events rows from..to, one a line.
func eventsPayloads(from, to int) string {
	var s []string
	for i := from; i <= to; i++ {
		s = append(s, fmt.Sprintf(`{"id":%d,"body":"b%d"}`, i, i))
	}
	return strings.Join(s, "\n")
}
