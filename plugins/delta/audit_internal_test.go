package delta

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Rejections reads back what recordedRejections writes: a batch's under
// its commit's one txn, a group's per appId.
func TestRejectionsForAudit(t *testing.T) {
	one := deltalog.Commit{Version: 3, Actions: []deltalog.Action{
		&deltalog.Txn{AppID: AppID("k", "a", 0), Version: 9},
		&deltalog.CommitInfo{Other: map[string]json.RawMessage{rejectedKey: json.RawMessage(`{"value":[4,7],"size":[8]}`)}},
	}}
	got, err := Rejections(one)
	if err != nil {
		t.Fatal(err)
	}
	offs := got[AppID("k", "a", 0)]
	slices.Sort(offs)
	if len(got) != 1 || !slices.Equal(offs, []uint64{4, 7, 8}) {
		t.Errorf("one batch: %v", got)
	}
	group := deltalog.Commit{Version: 4, Actions: []deltalog.Action{
		&deltalog.Txn{AppID: AppID("k", "a", 0), Version: 12},
		&deltalog.Txn{AppID: AppID("k", "a", 1), Version: 5},
		&deltalog.CommitInfo{Other: map[string]json.RawMessage{rejectedByAppKey: json.RawMessage(`{"` + AppID("k", "a", 1) + `":{"encoding":[2]}}`)}},
	}}
	got, err = Rejections(group)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !slices.Equal(got[AppID("k", "a", 1)], []uint64{2}) {
		t.Errorf("group: %v", got)
	}
	if AppID("k/x", "a b", 3) != "picomq-delta-sink/k%2Fx/a%20b/3" {
		t.Errorf("AppID escapes: %s", AppID("k/x", "a b", 3))
	}
}
