package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	decoding "github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// Binary formats (schema avro, proto, flatbuffer): each payload goes
// through the block's decoding.Decoder into JSON, and the batch reaches
// the plugin as schema "json". A *decoding.RecordError is the record's:
// dead-lettered (class encoding) under errors_tolerance = "all", a stop
// naming its offset under "none", as a payload that is not JSON. Any other
// error (a registry that does not answer) says nothing of the record: the
// batch is decoded again, without limit, with DecodeBackoff between
// attempts, and never reaches the plugin meanwhile, so no plugin attempt
// is spent and the offset holds (docs/runtime.md, "Decoding").

// DecodeBackoff is the wait after failed decode attempt n of a batch whose
// decoder failed transiently: as OpenBackoff, 200 ms doubling to 30 s.
var DecodeBackoff = OpenBackoff

// errUndecoded ends a batch whose decoder was failing when the runtime
// was asked to stop: not delivered, not committed, decoded again on
// restart. It is no failure of the sink.
var errUndecoded = errors.New("the batch was not decoded when the runtime stopped; it is delivered on restart")

// transientError is a decoder's failure that is not the record's.
type transientError struct {
	rec *kgo.Record
	err error
}

func (e *transientError) Error() string {
	return fmt.Sprintf("record at offset %d: decoder failed: %v", e.rec.Offset, e.err)
}

func (e *transientError) Unwrap() error { return e.err }

// decodeBinary appends the JSON of r's payload to sc.json and returns it
// (a slice of sc.json: no allocation of its own once the buffer has grown
// to a batch's size). An empty payload, a tombstone, stays empty, as under
// schema = "json". A record error comes back as the error the batch's
// check reports; any other as a *transientError.
func (sc *scratch) decodeBinary(ctx context.Context, dec decoding.Decoder, schema definition.Schema, r *kgo.Record) ([]byte, error) {
	if len(r.Value) == 0 {
		return r.Value, nil
	}
	start := len(sc.json)
	out, err := dec.AppendJSON(ctx, r.Topic, sc.json, r.Value)
	if err != nil {
		if !decoding.IsRecordError(err) {
			return nil, &transientError{rec: r, err: err}
		}
		return nil, fmt.Errorf("record at offset %d cannot be decoded (schema = %q): %w", r.Offset, schema, err)
	}
	// Later appends may move the buffer; this slice keeps the array it
	// points into, which nothing writes again before the batch is sent.
	sc.json = out
	return out[start:len(out):len(out)], nil
}

// decodeAll decodes recs for delivery as decode does, again while the
// block's decoder fails transiently: after DecodeBackoff(n), each attempt
// logged, until it succeeds, or until the runtime is asked to stop
// (errUndecoded) or work ends (its error).
// Each failed attempt is observed (outcome DecodeRetry); d gets what the
// one that succeeded decoded.
func (c *consumer) decodeAll(work context.Context, recs []*kgo.Record, sc *scratch, d *Delivery) (hostclient.Batch, []int, []rejected, error) {
	tolerant := c.t.ErrorsTolerance == definition.ToleranceAll
	pc, ok := c.s.out.(PayloadChecker)
	checks := ok && pc.ChecksPayloads(string(c.t.Schema))
	for attempt := 1; ; attempt++ {
		start := time.Now()
		b, sent, bad, dropped, err := decode(work, c.t.Schema, c.dec, recs, tolerant, checks, c.t.Transforms, sc)
		var te *transientError
		if !errors.As(err, &te) {
			d.Filtered = dropped
			if dropped > 0 {
				// A filter that never matches (a misspelled field) would
				// otherwise show only in a metric.
				for _, n := range c.t.Transforms.Notices() {
					c.log.Warn(n, "event", "filter_field_absent", "topic", recs[0].Topic)
				}
			}
			if c.dec != nil && err == nil {
				d.DecodeTook = time.Since(start)
				for _, r := range b.Records {
					if len(r.Payload) > 0 { // not a tombstone
						d.Decoded++
					}
				}
			}
			return b, sent, bad, err
		}
		retry := *d
		retry.Outcome, retry.Err = DecodeRetry, te
		c.s.cfg.Observer.Delivered(retry)
		if c.live.Err() != nil {
			return b, nil, nil, errUndecoded
		}
		wait := c.s.cfg.DecodeBackoff(attempt)
		c.log.Warn("batch not decoded: the decoder failed, not a record; decoding it again", "event", "decode_retry",
			"topic", te.rec.Topic, "partition", te.rec.Partition, "offset", te.rec.Offset, "first_offset", recs[0].Offset,
			"attempt", attempt, "err", te.err, "backoff_seconds", wait.Seconds())
		// The wait ends early when the runtime is asked to stop: a
		// registry outage must not hold the shutdown.
		wctx, cancel := context.WithCancel(work)
		stop := context.AfterFunc(c.live, cancel)
		err = backoff.Sleep(wctx, wait)
		stop()
		cancel()
		switch {
		case work.Err() != nil:
			return b, nil, nil, work.Err()
		case err != nil:
			return b, nil, nil, errUndecoded
		}
	}
}

// valueSchemas collects the value schemas of a batch's decoded records
// (ABI 1.3, docs/abi.md "Value schema"): one for a schema given in the
// definition; several when a registry decoded the batch with several
// versions, merged by decoding.MergeSchemas. A record the decoder could not
// describe leaves the batch without one: a hint that misses some records'
// fields would be wrong for them.
type valueSchemas struct {
	list        [][]byte
	undescribed bool
}

func (v *valueSchemas) reset() { v.list, v.undescribed = v.list[:0], false }

func (v *valueSchemas) add(s []byte) {
	if s == nil {
		v.undescribed = true
		return
	}
	for _, x := range v.list {
		if bytes.Equal(x, s) { // the same slice each time for one codec: a pointer compare
			return
		}
	}
	v.list = append(v.list, s)
}

// staticSchema is the value schema of every record dec decodes when dec
// is one codec with a schema fixed when it was compiled (decoding.Static
// over a decoding.Described): what Static.RecordSchema answers for each.
// nil otherwise: each record is asked for its own.
func staticSchema(dec decoding.Decoder) []byte {
	if s, ok := dec.(decoding.Static); ok {
		if d, ok := s.Codec.(decoding.Described); ok {
			return d.ValueSchema()
		}
	}
	return nil
}

// schema is the batch's value schema; nil: none.
func (v *valueSchemas) schema() []byte {
	switch {
	case v.undescribed || len(v.list) == 0:
		return nil
	case len(v.list) == 1:
		return v.list[0]
	}
	return decoding.MergeSchemas(v.list...)
}
