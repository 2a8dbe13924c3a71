package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
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

// failingStore answers every read with an error that quotes a URL
// carrying a credential, as some storage SDKs do.
type failingStore struct{ objstore.Store }

func (failingStore) Get(context.Context, string) ([]byte, error) {
	return nil, fmt.Errorf("GET https://acct.blob.core.windows.net/t/_delta_log/0.json?sig=sekrit-sas-token: %w", deltalog.ErrNotFound)
}

// The audit runs in picomq-connect, with no host redacting what it
// prints: its store replaces the sink's secrets in every error, and keeps
// the error's kind (a missing table stays ErrNotFound).
func TestAuditStoreRedactsSecrets(t *testing.T) {
	a, err := NewAudit(context.Background(), json.RawMessage(`{"table_uri":"file:///tmp/t","aws_s3_access_key":"AKIAEXAMPLE","aws_s3_secret_key":"sekrit-sas-token"}`), "k", sdk.Env{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.readOnly(failingStore{}).Get(context.Background(), "_delta_log/0.json")
	if err == nil || strings.Contains(err.Error(), "sekrit-sas-token") || !errors.Is(err, deltalog.ErrNotFound) {
		t.Fatalf("err = %v: want the secret redacted and ErrNotFound kept", err)
	}
}
