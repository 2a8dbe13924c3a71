package deltalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// An append that adds columns commits its metaData with the files; the
// new metaData keeps everything of the old one but the schema, and a rival
// append does not stop it while a rival schema change does.
func TestCommitAppendWithColumns(t *testing.T) {
	base := newTable(t)
	snap := load(t, base)
	md, err := deltalog.WithColumns(&snap.Metadata, []deltalog.StructField{{Name: "extra", Type: deltalog.TypeLong, Nullable: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deltalog.WithColumns(&snap.Metadata, []deltalog.StructField{{Name: strings.ToUpper(snap.Schema.Fields[0].Name), Type: deltalog.TypeLong}}); err == nil {
		t.Fatal("a column differing only in case was accepted")
	}
	rs := &racingStore{MemStore: base}
	rs.races.Store(1)
	rs.rival = func(v int64) {
		putCommit(base, v, `{"commitInfo":{"txnId":"rival"}}`, `{"txn":{"appId":"rival","version":1}}`)
	}
	res, err := deltalog.CommitAppend(ctx, rs, snap, deltalog.AppendCommit{
		Files: []deltalog.DataFile{dataFile("f.parquet", sp("x"))}, AppID: "me", AppVersion: 1, Metadata: md,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	final := load(t, base)
	if res.Version != 2 || final.Version != 2 || final.Schema.Field("extra") == nil || res.Snapshot.Schema.Field("extra") == nil {
		t.Fatalf("result %+v, table schema %s", res, final.Schema)
	}
	old, now := snap.Metadata, final.Metadata
	if now.ID != old.ID || now.Format.Provider != old.Format.Provider || strings.Join(now.PartitionColumns, ",") != strings.Join(old.PartitionColumns, ",") ||
		len(now.Configuration) != len(old.Configuration) || (old.CreatedTime != nil && *now.CreatedTime != *old.CreatedTime) ||
		!strings.HasPrefix(now.SchemaString, strings.TrimSuffix(old.SchemaString, "]}")) {
		t.Fatalf("metaData %+v, was %+v", now, old)
	}

	// A rival schema change: abort, the caller rebuilds.
	md2, err := deltalog.WithColumns(&final.Metadata, []deltalog.StructField{{Name: "more", Type: deltalog.TypeString, Nullable: true}})
	if err != nil {
		t.Fatal(err)
	}
	rs.races.Store(1)
	rs.rival = func(v int64) {
		putCommit(base, v, `{"commitInfo":{"txnId":"rival2"}}`, `{"metaData":`+metadataJSON(t, md2)+`}`)
	}
	_, err = deltalog.CommitAppend(ctx, rs, final, deltalog.AppendCommit{
		Files: []deltalog.DataFile{dataFile("g.parquet", sp("x"))}, Metadata: md2,
	}, nil)
	if !errors.Is(err, deltalog.ErrConcurrentModification) {
		t.Fatalf("err = %v, want a concurrent modification", err)
	}

	// A metaData that is not an extension of the table's is refused.
	other := *md2
	other.ID = "another"
	if _, err := deltalog.PrepareAppend(final, deltalog.AppendCommit{Metadata: &other}); err == nil {
		t.Fatal("a metaData with another table id was accepted")
	}
	if _, err := deltalog.PrepareAppend(final, deltalog.AppendCommit{Metadata: &snap.Metadata}); err == nil {
		t.Fatal("a metaData dropping a column was accepted")
	}
}

func metadataJSON(t *testing.T, md *deltalog.Metadata) string {
	t.Helper()
	data, err := deltalog.EncodeActions([]deltalog.Action{md})
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(data))
	return strings.TrimSuffix(strings.TrimPrefix(s, `{"metaData":`), "}")
}
