package delta_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// ABI 1.1: with a host that accepts rejections, records that cannot fit the
// table are rejected one by one and the rest of the batch is committed, with
// the batch's last offset in the txn action; a replay reports the same
// rejections and writes nothing twice. A 1.0 host gets FATAL as before.
func TestRejectedRecordsAreLeftOutAndReportedAgainOnReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "strict")
	uri := fileURI(dir)
	py(t, createStrict, uri)
	inst := newHarness(t).open("rej", map[string]any{"table_uri": uri})
	var payloads []string
	for i := range 10 {
		switch i {
		case 2:
			payloads = append(payloads, `{"id":2,"small":40000}`)
		case 7:
			payloads = append(payloads, `{"id":`)
		default:
			payloads = append(payloads, sprintf(`{"id":%d,"small":%d}`, i, i))
		}
	}
	b := jsonBatch("t", 100, payloads...)

	// A 1.0 host: the first bad record fails the batch, nothing is written.
	_, err := inst.ConsumeResult(b, hosttest.Batch1_0())
	wantStatus(t, err, hostclient.StatusFatal, `value 40000 out of range for short (topic "t", record 2, offset 102)`)
	if n := len(history(t, uri)); n != 1 {
		t.Fatalf("%d versions after a 1.0 host's failed batch", n)
	}

	b.AcceptRejections = true
	want := []struct {
		index  int
		reason hostclient.RejectReason
		msg    string
	}{
		{2, hostclient.RejectValue, `Invalid record value: field "small": value 40000 out of range for short (topic "t", record 2, offset 102)`},
		{7, hostclient.RejectEncoding, `Invalid JSON record: field "id": unexpected end of input at byte 6 (topic "t", record 7, offset 107)`},
	}
	check := func(rej []hostclient.Rejection, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(rej) != len(want) {
			t.Fatalf("rejections %+v", rej)
		}
		for i, w := range want {
			if rej[i].Index != w.index || rej[i].Reason != w.reason || rej[i].Message != w.msg {
				t.Errorf("rejection %d: %+v, want %+v", i, rej[i], w)
			}
		}
	}
	check(inst.ConsumeResult(b))
	rows := readRows(t, uri, "id")
	var ids []string
	for _, r := range rows {
		ids = append(ids, sprintf("%v", r["id"]))
	}
	if got := strings.Join(ids, ","); got != "0,1,3,4,5,6,8,9" {
		t.Fatalf("ids %s", got)
	}
	txn := func() string {
		return strings.TrimSpace(py(t, `
import glob, json
v = [json.loads(l)["txn"]["version"] for f in sorted(glob.glob(sys.argv[1] + "/_delta_log/*.json")) for l in open(f) if '"txn"' in l]
print(v)
`, dir))
	}
	if got := txn(); got != "[109]" {
		t.Fatalf("txn versions %s, want [109]", got)
	}

	// The replay (a host that lost the answer) learns the same rejections
	// and commits nothing.
	b.Attempt = 2
	check(inst.ConsumeResult(b))
	if n := len(history(t, uri)); n != 2 {
		t.Fatalf("%d versions after the replay", n)
	}
	// A batch whose every record is rejected commits nothing either.
	all := jsonBatch("t", 110, `{"id":"x"}`, `[1]`)
	all.AcceptRejections = true
	rej, err := inst.ConsumeResult(all)
	if err != nil || len(rej) != 2 {
		t.Fatalf("all rejected: %+v %v", rej, err)
	}
	if n := len(history(t, uri)); n != 2 {
		t.Fatalf("%d versions after an all-rejected batch", n)
	}
}

// A replay must report the rejections the table's commits made, not the
// ones today's schema would make: the host may have died between the commit
// and dead-lettering the rejected records, and if the schema was relaxed
// meanwhile, a rejection decided again would let the record go missing (in
// neither the table nor the dead-letter topic). Here a record without the
// non-nullable "id" is rejected, another partition commits in between, "id"
// is made nullable, and a fresh instance (the restarted host) gets the batch
// again, now extended by two new records.
func TestReplayReportsTheRejectionsTheCommitMadeAfterASchemaChange(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "strict")
	uri := fileURI(dir)
	py(t, createStrict, uri)
	cfg := map[string]any{"table_uri": uri}
	first := newHarness(t).open("rej", cfg)
	b := jsonBatch("t", 200, `{"id":1}`, `{"small":5}`, `{"id":3}`)
	b.AcceptRejections = true
	rej, err := first.ConsumeResult(b)
	if err != nil || len(rej) != 1 || rej[0].Index != 1 || rej[0].Reason != hostclient.RejectValue {
		t.Fatalf("first delivery: %+v %v", rej, err)
	}
	other := jsonBatch("t", 500, `{"id":500}`)
	other.Partition = 1
	consume(t, first, other) // version 2, another appId's commit

	// The commit says what it rejected, by offset and reason only.
	got := strings.TrimSpace(py(t, `
import json
for l in open(sys.argv[1] + "/_delta_log/00000000000000000001.json"):
    a = json.loads(l)
    if "commitInfo" in a: print(json.dumps(a["commitInfo"].get("picomqRejected"), sort_keys=True))
`, dir))
	if got != `{"value": [201]}` {
		t.Fatalf("commitInfo.picomqRejected = %s", got)
	}

	// Version 3: "id" made nullable, as ALTER COLUMN id DROP NOT NULL would.
	py(t, `
import json, os
log = sys.argv[1] + "/_delta_log/"
md = [json.loads(l)["metaData"] for l in open(log + "00000000000000000000.json") if '"metaData"' in l][0]
schema = json.loads(md["schemaString"])
for f in schema["fields"]:
    if f["name"] == "id": f["nullable"] = True
md["schemaString"] = json.dumps(schema)
with open(log + "00000000000000000003.json", "x") as out:
    out.write(json.dumps({"commitInfo": {"operation": "CHANGE COLUMN", "timestamp": 1767225600000}}) + "\n")
    out.write(json.dumps({"metaData": md}) + "\n")
`, dir)

	replay := jsonBatch("t", 200, `{"id":1}`, `{"small":5}`, `{"id":3}`, `{"small":6}`, `{"id":"x"}`)
	replay.Attempt, replay.AcceptRejections = 2, true
	rej, err = newHarness(t).open("rej", cfg).ConsumeResult(replay)
	if err != nil {
		t.Fatal(err)
	}
	if len(rej) != 2 || rej[0].Index != 1 || rej[0].Reason != hostclient.RejectValue ||
		!strings.Contains(rej[0].Message, `topic "t" offset 201 was rejected when Delta table `+uri+` version 1 was committed`) {
		t.Fatalf("replay rejections %+v, want record 1 (offset 201) as the commit recorded it", rej)
	}
	// A new bad record is named by its place in the batch, not in the
	// part of it the table did not have.
	if rej[1].Index != 4 || !strings.Contains(rej[1].Message, `(topic "t", record 4, offset 204)`) {
		t.Fatalf("rejection of the new record: %+v", rej[1])
	}
	// Offset 203 (no id) is new and fits the relaxed schema: written.
	var ids []string
	for _, r := range readRows(t, uri, "id") {
		ids = append(ids, sprintf("%v/%v", r["id"], r["small"]))
	}
	if got := strings.Join(ids, ","); got != "1/<nil>,3/<nil>,500/<nil>,<nil>/6" {
		t.Fatalf("rows %s", got)
	}
}
