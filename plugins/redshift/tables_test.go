package redshift_test

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

func TestTemplatedNames(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("templated", r.config(map[string]any{"target_table": "t_{topic}"}))
	victim := r.emuConn()
	r.execEmu(victim, `CREATE TABLE victim (id VARCHAR(10))`)
	topics := map[string]string{ // topic -> table as Redshift (and the emulator) fold it
		`orders.eu`:                     `t_orders.eu`,
		`we"ird`:                        `t_we"ird`,
		`x"; DROP TABLE victim; --`:     `t_x"; drop table victim; --`,
		`Mixed.Case`:                    `t_mixed.case`,
		`semi;colon 'quote' back\slash`: `t_semi;colon 'quote' back\slash`,
	}
	for topic, table := range topics {
		mustConsume(t, h, batch(topic, 0, 3))
		if n := r.count(table); n != 3 {
			t.Errorf("topic %q: table %q has %d rows", topic, table, n)
		}
		if n := r.count("staging_" + table); n != 0 {
			t.Errorf("topic %q: staging has %d rows", topic, n)
		}
		rows := r.rows(table, true, true)
		if len(rows) == 3 && (*rows[0].Topic != topic || !strings.HasPrefix(rows[0].ID, topic+":0:")) {
			t.Errorf("topic %q: row %v", topic, rows[0])
		}
	}
	if n := r.count("victim"); n != 0 {
		t.Fatal("victim changed")
	}
	// The same names again are cached: no DDL, no pg_table_def.
	r.emu.ResetStatements()
	mustConsume(t, h, batch(`we"ird`, 3, 3))
	if n := r.countStatements(`(?i)create table|pg_table_def`); n != 0 {
		t.Errorf("%d table checks for a cached table", n)
	}
}

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
