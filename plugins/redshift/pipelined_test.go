package redshift_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Pipelined batches (ABI 1.5): the tests set sdk.Batch.Pred themselves,
// an sdk.NewPending answered when the test says, playing the batch
// the runtime sent before the one under test and has not seen answered.
// Follows is left nil, so the SDK does not look the predecessor up itself.

// consumeAsync consumes b in the background; the channel gets its answer.
func consumeAsync(h uint64, b *sdk.Batch) <-chan error {
	done := make(chan error, 1)
	go func() { done <- sdk.Consume(h, b) }()
	return done
}

// appliedOffsets reads offsets_<table> of an upsert target: applied offset
// by partition.
func (r *rig) appliedOffsets(table string) map[int64]int64 {
	r.t.Helper()
	rs, err := r.pg.Query(r.ctx, "SELECT partition_id, applied_offset FROM "+pgx.Identifier{"offsets_" + table}.Sanitize())
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[int64]int64{}
	for rs.Next() {
		var p, off int64
		if err := rs.Scan(&p, &off); err != nil {
			r.t.Fatal(err)
		}
		out[p] = off
	}
	if err := rs.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// objects lists the bucket's keys.
func (r *rig) objects() []string {
	r.t.Helper()
	out, err := r.s3.ListObjectsV2(r.ctx, &s3.ListObjectsV2Input{Bucket: aws.String(r.bucket)})
	if err != nil {
		r.t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// notYet fails t if done has an answer within d.
func notYet(t *testing.T, done <-chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s answered (%v) while the batch before it was unanswered", what, err)
	case <-time.After(d):
	}
}

// answer waits (bounded) for done's answer.
func answer(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s not answered within a minute", what)
		return nil
	}
}

// write_mode = "upsert": a batch whose predecessor is unanswered is not
// applied until that one is answered; when it fails, the batch is not
// applied either and answers RETRY, leaving the applied offset where it
// was, so the predecessor's replay still applies its changes.
func TestUpsertPipelinedFollowerOfFailedBatch(t *testing.T) {
	r := newRig(t)
	const table = "cdcpipefail"
	h, _ := r.open("cdc_pipe_fail", upsertConfig(r, table, map[string]any{"key_columns": "id"}))
	mustConsume(t, h, records("orders", 0, `{"id":9,"v":"z","_op":"c"}`)) // offset 0 applied
	pred := records("orders", 1, `{"id":1,"v":"a","_op":"c"}`, `{"id":2,"v":"b","_op":"c"}`)
	follower := records("orders", 3, `{"id":1,"v":"c","_op":"u"}`, `{"id":3,"v":"d","_op":"c"}`)
	p, answerPred := sdk.NewPending(&sdk.Batch{Topic: "orders", Partition: 0, RangeLast: 2})
	follower.Pred = p
	done := consumeAsync(h, follower)
	notYet(t, done, 500*time.Millisecond, "the follower")
	if got := r.rows(table, "key_id"); len(got) != 1 {
		t.Fatalf("rows %v while the predecessor is unanswered: want only offset 0's", got)
	}
	answerPred(false) // the predecessor failed (not written)
	err := answer(t, done, "the follower")
	if sdk.StatusOf(err) != sdk.StatusRetry || !strings.Contains(err.Error(), "was not written, so this one is not either") {
		t.Fatalf("follower of a failed batch: %v, want RETRY", err)
	}
	if got, want := r.appliedOffsets(table), map[int64]int64{0: 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("applied offsets %v, want %v", got, want)
	}
	if keys := r.objects(); len(keys) != 0 {
		t.Errorf("the follower's files are left: %v", keys)
	}
	// The runtime delivers both again, in order, as ordinary batches.
	mustConsume(t, h, pred)
	mustConsume(t, h, records("orders", 3, `{"id":1,"v":"c","_op":"u"}`, `{"id":3,"v":"d","_op":"c"}`))
	want := map[string]string{"9": `{"id":9,"v":"z"}`, "1": `{"id":1,"v":"c"}`, "2": `{"id":2,"v":"b"}`, "3": `{"id":3,"v":"d"}`}
	if got := r.rows(table, "key_id"); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if got, want := r.appliedOffsets(table), map[int64]int64{0: 4}; !reflect.DeepEqual(got, want) {
		t.Fatalf("applied offsets %v, want %v", got, want)
	}
}

// write_mode = "upsert": a batch sent while its predecessor is unanswered
// is applied after it, once it was answered OK. Applied first, it would
// move the applied offset past the predecessor's changes, and the
// predecessor's load would skip them as a replay (key 2 missing).
func TestUpsertPipelinedFollowerWaitsForItsPredecessor(t *testing.T) {
	r := newRig(t)
	const table = "cdcpipeok"
	h, _ := r.open("cdc_pipe_ok", upsertConfig(r, table, map[string]any{"key_columns": "id"}))
	pred := records("orders", 0, `{"id":1,"v":"a","_op":"c"}`, `{"id":2,"v":"b","_op":"c"}`)
	follower := records("orders", 2, `{"id":1,"v":"c","_op":"u"}`, `{"id":3,"v":"d","_op":"c"}`)
	// All its records rejected: nothing to apply, still answered after the
	// predecessor.
	rejected := records("orders", 4, `{"id":null,"_op":"u"}`)
	rejected.AcceptRejections()
	p, answerPred := sdk.NewPending(&sdk.Batch{Topic: "orders", Partition: 0, RangeLast: 1})
	follower.Pred, rejected.Pred = p, p
	done, doneRejected := consumeAsync(h, follower), consumeAsync(h, rejected)
	notYet(t, done, 500*time.Millisecond, "the follower")
	notYet(t, doneRejected, 10*time.Millisecond, "the follower whose records are all rejected")
	if n := r.count(table); n != 0 {
		t.Fatalf("%d rows while the predecessor is unanswered", n)
	}
	mustConsume(t, h, pred)
	answerPred(true)
	if err := answer(t, done, "the follower"); err != nil {
		t.Fatalf("follower: %v", err)
	}
	if err := answer(t, doneRejected, "the follower whose records are all rejected"); err != nil {
		t.Fatalf("follower whose records are all rejected: %v", err)
	}
	want := map[string]string{"1": `{"id":1,"v":"c"}`, "2": `{"id":2,"v":"b"}`, "3": `{"id":3,"v":"d"}`}
	if got := r.rows(table, "key_id"); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if got, want := r.appliedOffsets(table), map[int64]int64{0: 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("applied offsets %v, want %v", got, want)
	}
}

// write_mode = "append" does not wait for a batch's predecessor to load:
// ids (topic:partition:offset) dedupe a replay of either, so the batch
// loads at once. Its answer waits for the predecessor's: RETRY when that
// one failed (its rows are in the table, and its replay skips them), so a
// runtime never keeps its dead letters while it sends its records again;
// nothing is lost or doubled.
func TestAppendPipelinedFollowerLoadsAtOnce(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("append_pipe", r.config(map[string]any{"target_table": "orders_pipe"}))
	p, answerPred := sdk.NewPending(&sdk.Batch{Topic: "orders", Partition: 0, RangeLast: 9})
	follower := batch("orders", 10, 5)
	follower.Pred = p
	done := consumeAsync(h, follower)
	poll.Until(t, time.Minute, "the follower's rows loaded before its predecessor answered", func() bool {
		_, n := r.ids("orders_pipe")
		return n == 5
	})
	select {
	case err := <-done:
		t.Fatalf("the follower answered (%v) before its predecessor", err)
	default:
	}
	answerPred(false)
	if err := answer(t, done, "the follower"); sdk.StatusOf(err) != sdk.StatusRetry {
		t.Fatalf("follower of a failed batch answered %v, want RETRY", err)
	}
	// The runtime delivers both again.
	mustConsume(t, h, batch("orders", 0, 10))
	mustConsume(t, h, batch("orders", 10, 5))
	ids, n := r.ids("orders_pipe")
	if n != 15 || len(ids) != 15 || !ids["orders:0:0"] || !ids["orders:0:14"] {
		t.Fatalf("%d rows, %d ids: want offsets 0..14 once each", n, len(ids))
	}

	// A follower of a batch answered OK is answered OK.
	p, answerPred = sdk.NewPending(&sdk.Batch{Topic: "orders", Partition: 0, RangeLast: 14})
	next := batch("orders", 15, 5)
	next.Pred = p
	done = consumeAsync(h, next)
	answerPred(true)
	if err := answer(t, done, "the next follower"); err != nil {
		t.Fatalf("follower of a batch answered OK: %v", err)
	}
	if _, n := r.ids("orders_pipe"); n != 20 {
		t.Fatalf("%d rows, want 20", n)
	}
}
