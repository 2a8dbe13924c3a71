package redshift_test

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

func TestSegmentTemplate(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("segments", r.config(map[string]any{"target_table": "orders_{topic_segment[-1]}"}))
	mustConsume(t, h, batch("orders.eu", 0, 2))
	mustConsume(t, h, batch("orders.us", 0, 2))
	if r.count("orders_eu") != 2 || r.count("orders_us") != 2 {
		t.Fatal("rows not routed per topic")
	}
	h2, _ := r.open("segments_out_of_range", r.config(map[string]any{"target_table": "orders_{topic_segment[2]}"}))
	err := sdk.Consume(h2, batch("orders.eu", 0, 2))
	if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), `topic "orders.eu" has 2 segments, index 2 is out of range`) {
		t.Fatalf("%v", err)
	}
}

func TestExistingTablesOfOtherSpellingsAreAccepted(t *testing.T) {
	r := newRig(t)
	conn := r.emuConn()
	for _, tbl := range []string{"fam", "staging_fam"} {
		r.execEmu(conn, `CREATE TABLE "`+tbl+`" (id CHARACTER VARYING(600), pico_key TEXT, payload VARCHAR(MAX), created_at NVARCHAR(64), note VARCHAR(10))`)
	}
	h, _ := r.open("families", r.config(map[string]any{"target_table": "fam", "include_metadata": false, "payload_format": "text"}))
	mustConsume(t, h, batch("orders", 0, 2))
	// pico_key is TEXT, which Redshift makes VARCHAR(256): a key whose
	// base64 is longer fails before upload instead of in COPY.
	b := batch("orders", 10, 1)
	b.Records[0].Key = []byte(strings.Repeat("k", 200))
	err := sdk.Consume(h, b)
	if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), "column pico_key needs 268 bytes but holds at most 256") {
		t.Fatalf("%v", err)
	}
}
