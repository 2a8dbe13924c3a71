package redrive_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/redrive"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// letter is a dead letter at dlq/part@off of source record src/sp@so,
// with attempts > 0 written as pico_redrive_attempts.
func letter(dlq string, part int32, off int64, src string, sp int32, so int64, attempts int) redrive.Letter {
	h := []kgo.RecordHeader{
		{Key: "trace", Value: []byte("t1")},
		{Key: metadata.DeadLetterTopic, Value: []byte(src)},
		{Key: metadata.DeadLetterPartition, Value: []byte(strconv.Itoa(int(sp)))},
		{Key: metadata.DeadLetterOffset, Value: []byte(strconv.FormatInt(so, 10))},
		{Key: metadata.DeadLetterTimestamp, Value: []byte("1700000000000")},
		{Key: metadata.DeadLetterClass, Value: []byte("value")},
		{Key: metadata.DeadLetterMessage, Value: []byte("bad")},
	}
	if attempts > 0 {
		h = append(h, kgo.RecordHeader{Key: metadata.RedriveAttempts, Value: []byte(strconv.Itoa(attempts))})
	}
	return redrive.Parse(&kgo.Record{Topic: dlq, Partition: part, Offset: off, Headers: h, Value: []byte("{}")})
}

func TestParseOriginal(t *testing.T) {
	l := letter("o.dlq", 0, 9, "o", 2, 41, 3)
	if l.Err != nil || l.Source != (redrive.Coord{Topic: "o", Partition: 2, Offset: 41}) || l.Attempts != 3 {
		t.Fatalf("%+v", l)
	}
	o := l.Original()
	if o.Topic != "o" || o.Partition != 2 || o.Offset != 41 || !o.Timestamp.Equal(time.UnixMilli(1700000000000)) ||
		len(o.Headers) != 1 || o.Headers[0].Key != "trace" {
		t.Fatalf("original %+v", o)
	}
	bad := redrive.Parse(&kgo.Record{Topic: "o.dlq", Headers: []kgo.RecordHeader{{Key: metadata.DeadLetterTopic, Value: []byte("o")},
		{Key: metadata.DeadLetterOffset, Value: []byte("x")}}})
	if bad.Err == nil {
		t.Fatal("a letter without partition and with offset x parsed")
	}
}

// One letter per source record: the one with most attempts, then the first
// by position. Batches follow each dead-letter partition's offsets and are
// cut where the source partition changes or at batch_length.
func TestPlan(t *testing.T) {
	letters := []redrive.Letter{
		letter("o.dlq", 0, 0, "o", 0, 10, 0), // superseded by @6
		letter("o.dlq", 0, 1, "o", 0, 11, 0),
		letter("o.dlq", 0, 2, "o", 0, 11, 0), // duplicate of @1
		letter("o.dlq", 0, 3, "o", 1, 5, 0),
		letter("o.dlq", 0, 4, "x", 0, 1, 0), // foreign
		letter("o.dlq", 0, 5, "o", 0, 12, 0),
		letter("o.dlq", 0, 6, "o", 0, 10, 1),
		letter("o.dlq", 0, 7, "o", 0, 13, 0),
		letter("o.dlq", 0, 8, "o", 0, 14, 0),
		{DLQ: redrive.Coord{Topic: "o.dlq", Offset: 9}, Err: errSome},
	}
	owner := func(src, dlq string) (int, bool) { return 0, src == "o" && dlq == "o.dlq" }
	plan, tallies := redrive.Plan(letters, owner, func(int) int { return 2 })
	p := redrive.Part{Topic: "o.dlq"}
	var got [][]int64
	for _, b := range plan[p] {
		var offs []int64
		for _, l := range b.Letters {
			offs = append(offs, l.DLQ.Offset)
		}
		got = append(got, offs)
	}
	want := [][]int64{{1}, {3}, {5, 6}, {7, 8}}
	if len(got) != len(want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) || got[i][0] != want[i][0] || got[i][len(got[i])-1] != want[i][len(want[i])-1] {
			t.Fatalf("batches %v, want %v", got, want)
		}
	}
	tl := tallies[p]
	if tl.Read != 10 || tl.Superseded != 1 || tl.Duplicates != 1 || tl.Foreign != 1 || tl.Unreadable != 1 || tl.Planned != 6 {
		t.Fatalf("tally %+v", *tl)
	}
}

type someErr struct{}

func (someErr) Error() string { return "unreadable" }

var errSome error = someErr{}
