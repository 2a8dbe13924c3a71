package redshift_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	for _, p := range []struct {
		in  []byte
		out *any
	}{{a, &x}, {b, &y}} {
		// Numbers compare as values: jsonb writes -12.5e3 as -12500.
		if err := json.NewDecoder(bytes.NewReader(p.in)).Decode(p.out); err != nil {
			t.Fatalf("%q: %v", p.in, err)
		}
	}
	return reflect.DeepEqual(x, y)
}

// superPayloads reads table's payloads from the backend as JSON text, by
// offset.
func (w *world) superPayloads(table string) map[uint64][]byte {
	w.t.Helper()
	rs, err := w.pg.Query(w.ctx, `SELECT id, payload::text FROM "`+table+`"`)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rs.Close()
	out := map[uint64][]byte{}
	for rs.Next() {
		var id, doc string
		if err := rs.Scan(&id, &doc); err != nil {
			w.t.Fatal(err)
		}
		out[offsetOf(row{"id": id})] = []byte(doc)
	}
	if err := rs.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// With payload_format = "super" the target's payload is SUPER (jsonb
// behind the emulator), the staging table's stays VARBYTE, and each payload
// is parsed by JSON_PARSE in the INSERT: it reads back as the same JSON.
// Payloads above VARCHAR(MAX)'s 65535 bytes land (they travel as VARBYTE);
// a replay changes nothing.
func TestSuperPayloads(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	inst := w.open("sup", w.config(map[string]any{"target_table": "sup_{topic_segment[0]}", "payload_format": "super"}))
	b := batch("orders", 0, 8)
	var big strings.Builder
	big.WriteString(`{"lines":[`)
	for i := range 4000 {
		if i > 0 {
			big.WriteByte(',')
		}
		fmt.Fprintf(&big, `{"sku":"sku-%05d","qty":%d,"note":"ü€𝄞"}`, i, i%7)
	}
	big.WriteString(`]}`)
	b.Records[1].Payload = []byte(`[1, "two", {"three": [3.25, null, true, false]}]`)
	b.Records[2].Payload = []byte(`"just a string"`)
	b.Records[3].Payload = []byte(` {"nested":{"a":{"a":{"a":1}}}, "esc":"q\"\\\u00e9\n"} `)
	b.Records[4].Payload = []byte(big.String())
	b.Records[5].Payload = []byte(`-12.5e3`)
	b.Records[6].Payload = []byte(`null`)
	if len(b.Records[4].Payload) <= 65535 {
		t.Fatalf("the big payload has %d bytes, want more than VARCHAR(MAX)", len(b.Records[4].Payload))
	}

	for attempt := uint32(1); attempt <= 2; attempt++ {
		b.Attempt = attempt
		consume(t, inst, b)
		got := w.superPayloads("sup_orders")
		if len(got) != len(b.Records) {
			t.Fatalf("attempt %d: %d rows, want %d", attempt, len(got), len(b.Records))
		}
		for _, r := range b.Records {
			if !sameJSON(t, got[r.Offset], r.Payload) {
				t.Errorf("attempt %d offset %d: read back %.200s, sent %.200s", attempt, r.Offset, got[r.Offset], r.Payload)
			}
		}
		w.exactlyOnce("sup_orders", "orders", 0, 7)
	}
	// A JSON null payload is a SUPER null, not an SQL NULL.
	var typ string
	if err := w.pg.QueryRow(w.ctx, `SELECT jsonb_typeof(payload) FROM sup_orders WHERE id = 'orders:0:6'`).Scan(&typ); err != nil || typ != "null" {
		t.Errorf("payload of offset 6: %q, %v", typ, err)
	}

	want := map[string]string{"sup_orders": "payload super", "staging_sup_orders": "payload varbyte(16777216)"}
	for table, def := range want {
		if defs := w.tableDef(table); !contains(defs, def) {
			t.Errorf("pg_table_def of %s: %v, want %q", table, defs, def)
		}
	}
	var pgType string
	if err := w.pg.QueryRow(w.ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = 'sup_orders'::regclass AND attname = 'payload'`).Scan(&pgType); err != nil || pgType != "jsonb" {
		t.Errorf("backend type of payload: %q, %v", pgType, err)
	}
	if n := w.emu.CountStatements(`(?i)^INSERT INTO "sup_orders" .* SELECT .*JSON_PARSE\(payload\)`); n != 2 {
		t.Errorf("%d INSERTs with JSON_PARSE(payload), want 2: %s", n, firstWords(w.emu))
	}

	// A table made for varbyte does not take a super configuration.
	other := w.open("sup_vb", w.config(map[string]any{"target_table": "supvb_{topic_segment[0]}"}))
	consume(t, other, batch("x", 0, 1))
	super := w.open("sup_on_vb", w.config(map[string]any{"target_table": "supvb_{topic_segment[0]}", "payload_format": "super"}))
	err := super.Consume(batch("x", 1, 1))
	wantStatus(t, err, hostclient.StatusRetry, "Schema mismatch detected", `column payload is varbyte(16777216), expected SUPER (payload_format = "super")`)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// A payload Redshift's JSON_PARSE would refuse, or too large, is caught
// before anything is uploaded: from an ABI 1.0 host the batch fails FATAL
// naming the record and nothing loads; from a 1.1 host each such record is
// rejected with its reason, the rest load, and a replay rejects the same.
func TestSuperPreflight(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	inst := w.open("supf", w.config(map[string]any{"target_table": "supf_{topic_segment[0]}", "payload_format": "super"}))
	huge := make([]byte, rsql.SuperMax+1) // one more byte than JSON_PARSE takes outside COPY
	copy(huge, `"`)
	for i := 1; i < len(huge)-1; i++ {
		huge[i] = 'a'
	}
	huge[len(huge)-1] = '"'
	bad := []struct {
		index   int
		payload []byte
		reason  hostclient.RejectReason
		msg     string
	}{
		{1, []byte(`{"order":1,`), hostclient.RejectEncoding, `offset 201 cannot be loaded into Redshift: column payload is not a JSON value (payload_format = "super" loads the payload with Redshift's JSON_PARSE)`},
		{2, []byte(`{"a":1,"a":2}`), hostclient.RejectEncoding, `offset 202 cannot be loaded into Redshift: column payload has the attribute "a" twice in one object`},
		{3, []byte(strings.Repeat("[", 1001) + strings.Repeat("]", 1001)), hostclient.RejectValue, `offset 203 cannot be loaded into Redshift: column payload nests arrays and objects deeper than 1000 levels`},
		{4, []byte(`{"s":"` + strings.Repeat("x", 65536) + `"}`), hostclient.RejectSize, `offset 204 cannot be loaded into Redshift: column payload has a string value of 65536 bytes, over the 65535 bytes`},
		{5, []byte{}, hostclient.RejectEncoding, `offset 205 cannot be loaded into Redshift: column payload is empty, not a JSON value`},
		{6, []byte("\"\xff\""), hostclient.RejectEncoding, `offset 206 cannot be loaded into Redshift: column payload is not valid UTF-8`},
		{7, huge, hostclient.RejectSize, `offset 207 cannot be loaded into Redshift: column payload needs 1000001 bytes but holds at most 1000000`},
		{8, []byte(`{"a":"x\u0000"}`), hostclient.RejectEncoding, `offset 208 cannot be loaded into Redshift: column payload has a string holding \u0000 (NUL)`},
		// Found in review: encoding/json reads a lone surrogate as U+FFFD, so
		// it passed the pre-flight and failed the INSERT on every delivery.
		{10, []byte(`{"a":"x\ud800y"}`), hostclient.RejectEncoding, `offset 210 cannot be loaded into Redshift: column payload has a string escaping half of a UTF-16 surrogate pair`},
		{11, []byte(`{"n":1e400}`), hostclient.RejectValue, `offset 211 cannot be loaded into Redshift: column payload has the number 1e400, beyond the range`},
	}
	for _, c := range bad {
		b := batch("mix", 200, 12)
		b.Records[c.index].Payload = c.payload
		w.emu.ResetStatements()
		_, err := inst.ConsumeResult(b, hosttest.Batch1_0())
		wantStatus(t, err, hostclient.StatusFatal, `record at topic "mix" `+c.msg)
		if got := w.emu.CountStatements(`(?i)^(begin|lock|copy|insert)`); got != 0 {
			t.Errorf("1.0 host, bad record %d: a load ran: %s", c.index, firstWords(w.emu))
		}
		if objs := w.objects(""); len(objs) != 0 {
			t.Errorf("1.0 host, bad record %d: objects %v", c.index, objs)
		}
		if n := w.count("supf_mix"); n != 0 {
			t.Errorf("1.0 host, bad record %d: %d rows visible", c.index, n)
		}
	}

	b := batch("mix", 200, 12)
	for _, c := range bad {
		b.Records[c.index].Payload = c.payload
	}
	b.AcceptRejections = true
	for attempt := uint32(1); attempt <= 2; attempt++ {
		b.Attempt = attempt
		rej, err := inst.ConsumeResult(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(rej) != len(bad) {
			t.Fatalf("attempt %d: rejections %+v", attempt, rej)
		}
		for i, c := range bad {
			if rej[i].Index != c.index || rej[i].Reason != c.reason || !strings.Contains(rej[i].Message, c.msg) {
				t.Errorf("attempt %d: rejection %+v, want index %d reason %v %q", attempt, rej[i], c.index, c.reason, c.msg)
			}
		}
		got := w.superPayloads("supf_mix")
		if len(got) != 2 || !sameJSON(t, got[200], b.Records[0].Payload) || !sameJSON(t, got[209], b.Records[9].Payload) {
			t.Fatalf("attempt %d: rows %v, want offsets 200 and 209", attempt, got)
		}
	}
}
