package redshift_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsparquet"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// The other writer has to wait for the lock while one is inside its load.
func TestSecondWriterWaitsForTheLock(t *testing.T) {
	r := newRig(t)
	cfg := r.config(map[string]any{"target_table": "locked"})
	ha, _ := r.open("lock_a", cfg)
	hb, _ := r.open("lock_b", cfg)
	hold := r.emu.DelayOn(`^INSERT`, 600*time.Millisecond, 1)
	done := make(chan error, 1)
	go func() { done <- sdk.Consume(ha, batch("a", 0, 10)) }()
	for hold.Hits() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	// A is between its COPY and its INSERT, holding the staging lock.
	start := time.Now()
	mustConsume(t, hb, batch("b", 0, 10))
	waited := time.Since(start)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if waited < 300*time.Millisecond {
		t.Errorf("writer B finished in %v while A held the lock", waited)
	}
	if ids, n := r.ids("locked"); n != 20 || len(ids) != 20 {
		t.Fatalf("%d rows for %d ids", n, len(ids))
	}
}

// A negative control: the spec's statements (COPY, INSERT and TRUNCATE, each
// committing on its own) from two writers, interleaved as two runtimes can
// interleave them, lose one writer's rows. This is the failure the load
// transaction exists to prevent, shown on the same emulator.
func TestSpecDesignLosesRowsWithTwoWriters(t *testing.T) {
	r := newRig(t)
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true})
	conn := r.emuConn()
	for _, tbl := range []string{"spec", "staging_spec"} {
		r.execEmu(conn, rsql.CreateTable(tbl, l))
	}
	upload := func(topic string) string {
		enc := rsparquet.NewEncoder(l)
		data, err := enc.Encode(rsparquet.Chunk{Topic: topic, CreatedAt: "2025-01-01T00:00:00.000Z",
			Records: []rsparquet.Record{{Offset: 1, Payload: []byte("x")}, {Offset: 2, Payload: []byte("y")}}})
		if err != nil {
			t.Fatal(err)
		}
		key := "spec/" + topic + ".parquet"
		if _, err := r.s3.PutObject(r.ctx, &s3.PutObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
		return rsql.Copy("staging_spec", l, rsql.S3URL(r.bucket, key), rsemuRole)
	}
	copyA, copyB := upload("a"), upload("b")
	a, b := r.emuConn(), r.emuConn()
	for _, s := range []struct {
		who string
		sql string
	}{
		{"b", copyB},
		{"b", rsql.Insert("spec", "staging_spec", l)}, // B's INSERT does not see A's rows yet
		{"a", copyA}, // A stages its rows
		{"b", "TRUNCATE " + rsql.Ident("staging_spec")}, // B clears staging: A's rows go
		{"a", rsql.Insert("spec", "staging_spec", l)},   // A inserts nothing
		{"a", "TRUNCATE " + rsql.Ident("staging_spec")},
	} {
		c := a
		if s.who == "b" {
			c = b
		}
		r.execEmu(c, s.sql)
	}
	ids, _ := r.ids("spec")
	if len(ids) != 2 || ids["a:0:1"] || !ids["b:0:1"] {
		t.Fatalf("ids %v: the spec's interleaving should have lost writer A's rows", ids)
	}
}
