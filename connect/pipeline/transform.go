package pipeline

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/transform"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// transformed runs a block's transforms on one record whose payload is
// JSON, appending the result to sc's payload arena (the batch's records
// point into it until the host copied them). keep false without an error
// is a record a transform dropped: it is counted, and its offset moves with
// its batch. An error is the record's (a dead letter, or a stop): class
// encoding when the payload is not JSON at all, value when a transform
// cannot apply to it. An empty payload (a tombstone) is not transformed.
func transformed(xf *transform.Chain, r *kgo.Record, payload []byte, sc *scratch) (out []byte, keep bool, reason hostclient.RejectReason, err error) {
	if len(payload) == 0 {
		return payload, true, 0, nil
	}
	// The record's Meta is built in sc: nothing allocated per record.
	m := &sc.meta
	*m = transform.Meta{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key,
		Headers: sc.headers[:0]}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, transform.Header{Key: h.Key, Value: h.Value})
	}
	sc.headers = m.Headers
	start := len(sc.payloads)
	sc.payloads, keep, err = xf.Apply(sc.payloads, payload, m)
	if err != nil {
		var re *transform.RecordError
		if errors.As(err, &re) && re.NotJSON {
			return nil, false, hostclient.RejectEncoding, fmt.Errorf("record at offset %d is not valid JSON (schema = \"json\")", r.Offset)
		}
		return nil, false, hostclient.RejectValue, fmt.Errorf("record at offset %d: %w", r.Offset, err)
	}
	if !keep {
		return nil, false, 0, nil
	}
	return sc.payloads[start:len(sc.payloads):len(sc.payloads)], true, 0, nil
}
