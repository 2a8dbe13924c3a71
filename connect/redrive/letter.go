package redrive

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/shared/metadata"
)

// Coord is a record's place in a topic.
type Coord struct {
	Topic     string
	Partition int32
	Offset    int64
}

func (c Coord) String() string { return fmt.Sprintf("%s/%d@%d", c.Topic, c.Partition, c.Offset) }

// Letter is one dead letter as read from its dead-letter topic.
type Letter struct {
	DLQ       Coord     // where it sits in the dead-letter topic
	Source    Coord     // pico_source_topic, _partition, _offset: the original record's
	Timestamp time.Time // pico_source_timestamp
	// Attempts is pico_redrive_attempts: how many redrives saw the record
	// rejected again (0 for one the loop dead-lettered).
	Attempts int
	Record   *kgo.Record // as read
	// Err says why its pico_source_* headers cannot be read: it cannot be
	// put back. nil when they can.
	Err error
}

// Parse reads a dead letter's headers. When a name occurs more than once
// the last counts: the runtime appends its headers after the record's own.
func Parse(r *kgo.Record) Letter {
	l := Letter{DLQ: Coord{r.Topic, r.Partition, r.Offset}, Record: r}
	last := func(name string) (string, bool) {
		for i := len(r.Headers) - 1; i >= 0; i-- {
			if r.Headers[i].Key == name {
				return string(r.Headers[i].Value), true
			}
		}
		return "", false
	}
	var errs []error
	// A timestamp may be negative (-1: none); partitions and offsets not.
	num := func(name string, bits int, required bool) int64 {
		s, ok := last(name)
		if !ok {
			if required {
				errs = append(errs, fmt.Errorf("no %s header", name))
			}
			return 0
		}
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil || n < 0 && name != metadata.DeadLetterTimestamp {
			errs = append(errs, fmt.Errorf("header %s = %q: not a decimal in range", name, s))
		}
		return n
	}
	topic, ok := last(metadata.DeadLetterTopic)
	if !ok || topic == "" {
		errs = append(errs, fmt.Errorf("no %s header", metadata.DeadLetterTopic))
	}
	l.Source = Coord{topic, int32(num(metadata.DeadLetterPartition, 32, true)), num(metadata.DeadLetterOffset, 64, true)}
	l.Timestamp = time.UnixMilli(num(metadata.DeadLetterTimestamp, 64, true))
	l.Attempts = int(num(metadata.RedriveAttempts, 32, false))
	l.Err = errors.Join(errs...)
	return l
}

// Original is the record as it was consumed the first time: its source
// coordinates and timestamp, key, value, and its own headers (without the
// ones the runtime added, metadata.DeadLetterHeaders).
func (l *Letter) Original() *kgo.Record {
	r := l.Record
	o := &kgo.Record{Topic: l.Source.Topic, Partition: l.Source.Partition, Offset: l.Source.Offset,
		Timestamp: l.Timestamp, Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		if !slices.Contains(metadata.DeadLetterHeaders, h.Key) {
			o.Headers = append(o.Headers, h)
		}
	}
	return o
}
