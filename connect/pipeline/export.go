package pipeline

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	decoding "github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// What the loop does to one batch, for the commands that deliver records
// outside it (connect/redrive): the same decoding, transforms, client
// options and dead-letter records, so that a record put back goes through
// exactly what it went through the first time.

// BadRecord is a record the runtime cannot hand to the plugin (not
// decodable for the block's schema, or a transform cannot apply to it),
// bound for the dead-letter topic.
type BadRecord struct {
	Record  *kgo.Record
	Reason  hostclient.RejectReason
	Message string
}

// Decode builds the batch the loop would hand the plugin for recs (one
// topic-partition, in order) of block t, as under errors_tolerance =
// "all": records that cannot be decoded or transformed come back in bad,
// records a transform drops are counted in dropped, and sent maps the
// batch's records to recs. dec is the block's decoder (nil unless its
// schema is binary); pluginChecks leaves the json and text checks to the
// plugin (its describe()'s payload_checks). A decoder's failure that is
// not the record's (a registry that does not answer) is err: the batch
// cannot be built now.
func Decode(ctx context.Context, t *definition.Topic, dec decoding.Decoder, recs []*kgo.Record, pluginChecks bool) (b hostclient.Batch, sent []int, bad []BadRecord, dropped int, err error) {
	var sc scratch
	b, sent, rej, dropped, err := decode(ctx, t.Schema, dec, recs, true, pluginChecks, t.Transforms, &sc)
	for _, r := range rej {
		bad = append(bad, BadRecord{Record: r.rec, Reason: r.reason, Message: r.msg})
	}
	return b, slices.Clone(sent), bad, dropped, err
}

// ClientOptions are the kgo options that reach the brokers of block t:
// its bootstrap.servers (else brokers), TLS and SASL settings. No group,
// no subscription.
func ClientOptions(brokers []string, t *definition.Topic) ([]kgo.Opt, error) {
	return connOpts(brokers, *t)
}

// DeadLetterRecord is the record the runtime produces to dead-letter topic
// dlq for src: src's key, value and headers, then the pico_source_*
// headers naming src's coordinates, the reason's class and the message
// (docs/runtime.md, "Bad records").
func DeadLetterRecord(src *kgo.Record, dlq string, reason hostclient.RejectReason, msg string) *kgo.Record {
	headers := append(slices.Clip(src.Headers),
		kgo.RecordHeader{Key: metadata.DeadLetterTopic, Value: []byte(src.Topic)},
		kgo.RecordHeader{Key: metadata.DeadLetterPartition, Value: strconv.AppendInt(nil, int64(src.Partition), 10)},
		kgo.RecordHeader{Key: metadata.DeadLetterOffset, Value: strconv.AppendInt(nil, src.Offset, 10)},
		kgo.RecordHeader{Key: metadata.DeadLetterTimestamp, Value: strconv.AppendInt(nil, src.Timestamp.UnixMilli(), 10)},
		kgo.RecordHeader{Key: metadata.DeadLetterClass, Value: []byte(reason.String())},
		kgo.RecordHeader{Key: metadata.DeadLetterMessage, Value: []byte(msg)},
	)
	return &kgo.Record{Topic: dlq, Key: src.Key, Value: src.Value, Headers: headers}
}
