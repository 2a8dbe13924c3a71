package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/child"
	decoding "github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/transform"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/jsonscan"
	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// Outcome is how one delivery attempt ended.
type Outcome int

// Outcomes of an attempt.
const (
	OK      Outcome = iota // consume() returned OK; the offset moves
	Retry                  // RETRY: the same batch again, up to MaxAttempts
	Fatal                  // FATAL, a contract breach or a host refusal: stop
	Exited                 // the plugin's process died: rewind to the committed offsets
	Invalid                // the runtime could not decode a record for the schema
	// DeadLetterFailed: the batch was written but its rejected records
	// could not be produced to the dead-letter topic: stop, uncommitted.
	DeadLetterFailed
	// DecodeRetry: the block's decoder failed, not a record (a Schema
	// Registry that does not answer); the batch did not reach the plugin
	// and is decoded again (Attempt 0).
	DecodeRetry
)

func (o Outcome) String() string {
	return [...]string{"ok", "retry", "fatal", "exited", "invalid", "dead_letter_failed", "decode_retry"}[o]
}

// Delivery is one attempt to hand a batch to the plugin, as the Observer
// sees it.
type Delivery struct {
	Sink      string
	Topic     string
	Partition int32
	First     int64 // offset of the first record
	Last      int64 // offset of the last record
	Records   int
	Attempt   int
	Took      time.Duration
	Outcome   Outcome
	Err       error
	// DeadLetters counts the records of an OK delivery that went to the
	// dead-letter topic (errors_tolerance = "all"), per reason class
	// (value, size, encoding): rejected by the plugin (ABI 1.1) or not
	// decodable by the runtime. They are produced and acknowledged before
	// the offset moves. Attempt 0 is a batch no record of which reached the
	// plugin.
	DeadLetters map[string]int
	// Filtered counts the records of the batch a transform dropped
	// (filter_records, unwrap_envelope of a null): handled, never handed
	// to the plugin, and committed past with their batch.
	Filtered int
	// Decoded is how many payloads of a binary-format block the runtime
	// decoded for this delivery, in DecodeTook; 0 for other schemas, and
	// for the attempts after the first of one decoding.
	Decoded    int
	DecodeTook time.Duration
	// Newest is the newest Kafka record timestamp of the batch (its
	// event time as the producer or broker set it); zero when no record
	// has one. With an OK outcome it is committed: the freshness gauges.
	Newest time.Time
}

// Observer is told about every delivery attempt. Its methods must not
// block.
type Observer interface {
	Delivered(Delivery)
}

type nopObserver struct{}

func (nopObserver) Delivered(Delivery) {}

// newest returns the newest timestamp of recs; zero when none has one (a
// record without a timestamp has -1, before the Unix epoch).
func newest(recs []*kgo.Record) time.Time {
	var t time.Time
	for _, r := range recs {
		if r.Timestamp.UnixMilli() > 0 && r.Timestamp.After(t) {
			t = r.Timestamp
		}
	}
	return t
}

// classify maps what a Deliverer returned to an Outcome.
func classify(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, child.ErrExited):
		return Exited
	case hostclient.CodeOf(err) == hostclient.StatusRetry:
		return Retry
	default:
		return Fatal
	}
}

// StopError is a consumer stopped on a batch: after MaxAttempts failures,
// on FATAL, or on a record the runtime cannot decode.
type StopError struct {
	Topic     string
	Partition int32
	Offset    int64 // the first record of the batch; delivered first on restart
	Attempts  int
	Outcome   Outcome
	Err       error
	// DeadLetters is how many records of the batch this attempt routed to
	// the dead-letter topic, each acknowledged by the broker; 0 until the
	// dead-letter path sets it. The metrics count it in
	// picomq_connect_dead_letters_total.
	DeadLetters int
}

func (e *StopError) Error() string {
	return fmt.Sprintf("topic %s partition %d offset %d: %s after %d attempt(s): %v",
		e.Topic, e.Partition, e.Offset, e.Outcome, e.Attempts, e.Err)
}

func (e *StopError) Unwrap() error { return e.Err }

// errRewind asks the consumer to drop what it buffered and resume from the
// committed offsets: the plugin's process died with a batch in flight.
var errRewind = errors.New("rewind to the committed offsets")

// scratch holds the slices a batch is decoded into. The host driver copies
// a batch into its frame before Consume returns, so they are reused by the
// next batch of the same delivery slot: the consumer's own with
// max_in_flight = 1, one per batch in flight otherwise (never two
// deliveries at once).
type scratch struct {
	records  []hostclient.Record
	sent     []int
	json     []byte // the decoded payloads of a binary-format batch (binary.go)
	payloads []byte // the transformed payloads of the batch (transform.go)
	schemas  valueSchemas
	meta     transform.Meta
	headers  []transform.Header
}

// rejected is a record that will never be written, on its way to the
// dead-letter topic.
type rejected struct {
	rec    *kgo.Record
	reason hostclient.RejectReason
	msg    string
}

// decode checks each payload against the schema and builds the batch. The
// plugin gets the payload bytes as they are: json and text are checked,
// not rewritten, unless pluginChecks (the plugin checks them itself). With
// dec set (a binary schema) each payload is decoded into JSON instead
// (binary.go), and the batch goes as json. A payload that fails the check
// stops the batch, or, with tolerant set, is left out of the batch and
// returned in bad; sent maps the batch's records back to recs. A decoder's
// failure that is not the record's is a *transientError. With transforms
// (xf not nil) each JSON payload, decoded or not, is then run through them
// (transformed): the plugin gets the result, a record they drop is left out
// and counted in dropped, and one they cannot apply to is a bad record like
// a payload that is not JSON.
// The batch's records and sent are built in sc's slices.
func decode(ctx context.Context, schema definition.Schema, dec decoding.Decoder, recs []*kgo.Record, tolerant, pluginChecks bool, xf *transform.Chain, sc *scratch) (b hostclient.Batch, sent []int, bad []rejected, dropped int, err error) {
	b = hostclient.Batch{Topic: recs[0].Topic, Partition: uint32(recs[0].Partition), Schema: string(schema),
		Records: sc.records[:0]}
	if dec != nil {
		b.Schema = string(definition.SchemaJSON)
	}
	sent = sc.sent[:0]
	sc.json = sc.json[:0]
	sc.payloads = sc.payloads[:0]
	describer, _ := dec.(decoding.Describer)
	if xf != nil {
		describer = nil // transforms change the records' shape: no value schema
	}
	sc.schemas.reset()
	// One codec whose schema is fixed at compile time describes every
	// record alike: asked once per batch, not once per record.
	fixed := staticSchema(dec)
	described := false
	defer func() { sc.records, sc.sent = b.Records, sent }()
	for i, r := range recs {
		payload := r.Value
		var derr error
		switch {
		case dec != nil:
			if payload, derr = sc.decodeBinary(ctx, dec, schema, r); derr != nil {
				var te *transientError
				if errors.As(derr, &te) {
					return b, nil, nil, dropped, derr
				}
			}
			switch {
			case derr != nil || describer == nil || len(payload) == 0:
			case fixed != nil:
				described = true
			default:
				sc.schemas.add(describer.RecordSchema(ctx, r.Topic, r.Value))
			}
		case schema == definition.SchemaJSON:
			// An empty value is a tombstone (a deletion on a compacted
			// topic), not malformed JSON: it goes to the plugin, which
			// says what a tombstone gets (docs/delta.md, docs/redshift.md).
			// Transforms check the payload as they parse it.
			if len(r.Value) > 0 && !pluginChecks && xf == nil && !jsonscan.Valid(r.Value) {
				derr = fmt.Errorf("record at offset %d is not valid JSON (schema = \"json\")", r.Offset)
			}
		case schema == definition.SchemaText:
			if !pluginChecks && !utf8.Valid(r.Value) {
				derr = fmt.Errorf("record at offset %d is not valid UTF-8 (schema = \"text\")", r.Offset)
			}
		}
		reason := hostclient.RejectEncoding
		if derr == nil && xf != nil {
			var keep bool
			if payload, keep, reason, derr = transformed(xf, r, payload, sc); derr == nil && !keep {
				dropped++
				continue
			}
		}
		if derr != nil {
			if !tolerant {
				return b, nil, nil, dropped, derr
			}
			bad = append(bad, rejected{rec: r, reason: reason, msg: fmt.Sprintf("topic %q partition %d %v", r.Topic, r.Partition, derr)})
			continue
		}
		hr := hostclient.Record{Offset: uint64(r.Offset), TimestampMs: r.Timestamp.UnixMilli(), Key: r.Key, Payload: payload}
		if hr.Payload == nil {
			hr.Payload = []byte{}
		}
		for _, h := range r.Headers {
			hr.Headers = append(hr.Headers, hostclient.Header{Key: h.Key, Value: h.Value})
		}
		b.Records = append(b.Records, hr)
		sent = append(sent, i)
	}
	if described {
		sc.schemas.add(fixed)
	}
	if describer != nil {
		b.ValueSchema = sc.schemas.schema()
	}
	return b, sent, bad, dropped, nil
}

// deliver hands f's records (one topic-partition, in offset order) to the
// plugin until it returns OK, and returns nil then. It returns errRewind
// when the plugin's process died, a *StopError when the consumer must
// stop, or ctx's error when the wait between attempts was cut short. A
// follower (f.pred set) is delivered by follow instead, once. The batch is
// decoded into f.sc, which no other delivery uses meanwhile. Deliveries
// may run at once (max_in_flight): deliver touches no state of the loop's
// but the attempts (under attemptsMu).
func (c *consumer) deliver(ctx context.Context, f *flight) error {
	defer f.ended()
	recs, sc := f.recs, f.sc
	first, last := recs[0], recs[len(recs)-1]
	k := tp{first.Topic, first.Partition}
	d := Delivery{Sink: c.s.def.Key, Topic: k.topic, Partition: k.partition, First: first.Offset, Last: last.Offset, Records: len(recs), Newest: newest(recs)}
	tolerant := c.t.ErrorsTolerance == definition.ToleranceAll
	b, sent, bad, err := c.decodeAll(ctx, recs, sc, &d)
	if f.pred != nil && err != nil {
		// Whatever it is, the records go again as an ordinary batch,
		// which reports it.
		return unsent(err)
	}
	if errors.Is(err, errUndecoded) || err != nil && ctx.Err() != nil {
		return err
	}
	if err != nil {
		d.Outcome, d.Err = Invalid, err
		c.s.cfg.Observer.Delivered(d)
		return &StopError{Topic: k.topic, Partition: k.partition, Offset: first.Offset, Outcome: Invalid, Err: err}
	}
	b.AcceptRejections = tolerant
	b.RangeLast = f.last
	if f.pred != nil {
		return c.follow(ctx, f, b, sent, bad, d)
	}
	if len(b.Records) == 0 && len(bad) == 0 {
		// Every record was dropped by a transform: handled, the offset
		// moves past them (attempt 0, as a batch of only dead letters).
		c.s.cfg.Observer.Delivered(d)
		return nil
	}
	if len(b.Records) == 0 {
		// Nothing the plugin could take: only dead letters.
		return c.deadLetter(ctx, d, bad)
	}
	// A batch redelivered after its process died keeps counting attempts.
	attempt := 1
	c.attemptsMu.Lock()
	if m, ok := c.attempts[k]; ok && m.offset == first.Offset {
		attempt = m.attempt + 1
	}
	delete(c.attempts, k)
	c.attemptsMu.Unlock()
	for {
		b.Attempt = uint32(attempt)
		start := time.Now()
		f.calling()
		rej, err := c.s.out.Consume(ctx, b)
		if err != nil && ctx.Err() != nil {
			return ctx.Err() // the shutdown timeout passed: the outcome is unknown
		}
		d.Attempt, d.Took, d.Outcome, d.Err = attempt, time.Since(start), classify(err), err
		log := c.log.With("topic", k.topic, "partition", k.partition, "first_offset", first.Offset,
			"last_offset", last.Offset, "records", len(recs), "attempt", attempt)
		if d.Outcome == OK && (len(rej) > 0 || len(bad) > 0) {
			log.Debug("batch delivered with rejected records", "took", d.Took, "rejected", len(rej)+len(bad))
			return c.rejections(ctx, d, recs, sent, rej, bad)
		}
		c.s.cfg.Observer.Delivered(d)
		d.Decoded, d.DecodeTook = 0, 0 // counted once
		switch d.Outcome {
		case OK:
			log.Debug("batch delivered", "event", "batch_delivered", "took_seconds", d.Took.Seconds())
			return nil
		case Fatal:
			return &StopError{Topic: k.topic, Partition: k.partition, Offset: first.Offset, Attempts: attempt, Outcome: Fatal, Err: err}
		}
		if attempt >= MaxAttempts {
			return &StopError{Topic: k.topic, Partition: k.partition, Offset: first.Offset, Attempts: attempt, Outcome: d.Outcome, Err: err}
		}
		wait := c.s.cfg.Backoff(attempt)
		log.Warn("batch not delivered; delivering again", "event", "batch_retry", "outcome", d.Outcome.String(), "err", err, "backoff_seconds", wait.Seconds())
		if err := backoff.Sleep(ctx, wait); err != nil {
			return err
		}
		if d.Outcome == Exited {
			c.attemptsMu.Lock()
			c.attempts[k] = mark{offset: first.Offset, attempt: attempt}
			c.attemptsMu.Unlock()
			return errRewind
		}
		attempt++
	}
}

// rejections sends to the dead-letter topic what the plugin rejected of
// an OK batch (rej, by index into sent) and what the runtime did (bad).
func (c *consumer) rejections(ctx context.Context, d Delivery, recs []*kgo.Record, sent []int, rej []hostclient.Rejection, bad []rejected) error {
	all := append([]rejected(nil), bad...)
	for _, r := range rej {
		if r.Index < 0 || r.Index >= len(sent) {
			// The C host checks this; never trust it blindly.
			err := fmt.Errorf("the plugin rejected record %d of a batch of %d", r.Index, len(sent))
			return &StopError{Topic: d.Topic, Partition: d.Partition, Offset: d.First, Attempts: d.Attempt, Outcome: Fatal, Err: err}
		}
		all = append(all, rejected{rec: recs[sent[r.Index]], reason: r.Reason, msg: r.Message})
	}
	return c.deadLetter(ctx, d, all)
}

// follow delivers a follower, decoded into b: it waits until its
// predecessor called the plugin or ended, then makes one attempt, with
// Follows set so that the plugin writes it only with or after the
// predecessor (docs/abi.md, "Pipelined batches"). Anything but OK is
// errUnsent: its records go again as an ordinary batch, with the attempts,
// backoff and dead letters of deliver; so are its dead letters produced
// only once it answered OK. A follower with nothing for the plugin (all
// dead letters, or all dropped by transforms) waits for its predecessor's
// end instead: its dead letters go only after it returned OK.
//
// A follower returns nil only after its predecessor returned nil, so that
// nil from a flight means every flight before it returned nil: its dead
// letters are produced only then, never for records that go again because
// a batch before them failed after the plugin's OK (its own dead letters
// could not be produced, say), which would produce them twice.
func (c *consumer) follow(ctx context.Context, f *flight, b hostclient.Batch, sent []int, bad []rejected, d Delivery) error {
	p := f.pred
	wait := p.called
	if len(b.Records) == 0 {
		wait = p.done
	}
	select {
	case <-wait:
	case <-ctx.Done():
		return unsent(ctx.Err())
	}
	if !p.plugged {
		// It ended without calling the plugin (plugged is written before
		// called closes): its result, imminent, decides; following a
		// batch the plugin never saw would be refused after a wait.
		if err := predecessorEnd(ctx, p); err != nil {
			return err
		}
	}
	select {
	case <-p.done:
		switch {
		case p.err != nil:
			return unsent(errors.New("the batch before it was not delivered"))
		case p.plugged:
			b.Follows = &p.last
		} // else it ended OK without a call: nothing to follow
	default: // it called the plugin and has not returned
		b.Follows = &p.last
	}
	if len(b.Records) == 0 {
		if len(bad) == 0 {
			c.s.cfg.Observer.Delivered(d) // every record dropped by a transform
			return nil
		}
		if err := c.deadLetter(ctx, d, bad); err != nil {
			return unsent(err)
		}
		return nil
	}
	b.Attempt = 1
	f.calling()
	if b.Follows != nil {
		c.s.followed.Add(1)
	}
	start := time.Now()
	rej, err := c.s.out.Consume(ctx, b)
	if err != nil && ctx.Err() != nil {
		return unsent(ctx.Err())
	}
	d.Attempt, d.Took, d.Outcome, d.Err = 1, time.Since(start), classify(err), err
	if d.Outcome == OK {
		// Written; kept only if every batch before it is (see above).
		if err := predecessorEnd(ctx, p); err != nil {
			// The call was made, but its records go again: counted as
			// a retry, not as records delivered.
			d.Outcome, d.Err = Retry, err
			c.s.cfg.Observer.Delivered(d)
			return err
		}
	}
	if d.Outcome == OK && (len(rej) > 0 || len(bad) > 0) {
		if err := c.rejections(ctx, d, f.recs, sent, rej, bad); err != nil {
			return unsent(err)
		}
		return nil
	}
	c.s.cfg.Observer.Delivered(d)
	if d.Outcome != OK {
		c.log.Info("pipelined batch not delivered; it goes again after the batches before it", "event", "pipelined_retry",
			"topic", d.Topic, "partition", d.Partition, "first_offset", d.First, "last_offset", d.Last, "records", d.Records,
			"outcome", d.Outcome.String(), "err", err)
		return unsent(err)
	}
	c.log.Debug("batch delivered", "event", "batch_delivered", "topic", d.Topic, "partition", d.Partition, "first_offset", d.First,
		"took_seconds", d.Took.Seconds(), "pipelined", b.Follows != nil)
	return nil
}

// predecessorEnd waits for p, the flight a follower follows, to return:
// nil when it returned nil, else unsent (its records go again, and so do
// the follower's).
func predecessorEnd(ctx context.Context, p *flight) error {
	select {
	case <-p.done:
	case <-ctx.Done():
		return unsent(ctx.Err())
	}
	if p.err != nil {
		return unsent(errors.New("the batch before it was not delivered"))
	}
	return nil
}
