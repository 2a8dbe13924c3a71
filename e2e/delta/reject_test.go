package delta_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostdriver"
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
	_, err := inst.ConsumeResult(b, hostdriver.Batch1_0())
	wantStatus(t, err, hostdriver.StatusFatal, `value 40000 out of range for short (topic "t", record 2, offset 102)`)
	if n := len(history(t, uri)); n != 1 {
		t.Fatalf("%d versions after a 1.0 host's failed batch", n)
	}

	b.AcceptRejections = true
	want := []struct {
		index  int
		reason hostdriver.RejectReason
		msg    string
	}{
		{2, hostdriver.RejectValue, `Invalid record value: field "small": value 40000 out of range for short (topic "t", record 2, offset 102)`},
		{7, hostdriver.RejectEncoding, `Invalid JSON record: field "id": unexpected end of input at byte 6 (topic "t", record 7, offset 107)`},
	}
	check := func(rej []hostdriver.Rejection, err error) {
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
