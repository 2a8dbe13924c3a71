package objstore_test

import (
	"context"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

func TestCountedCountsEveryOperationByKind(t *testing.T) {
	ctx := context.Background()
	local, err := objstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var r objstore.Requests
	s := objstore.Counted(local, &r)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Put(ctx, "a/x.parquet", []byte("data")))
	must(s.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("{}\n")))
	if _, err := s.Get(ctx, "a/x.parquet"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRange(ctx, "a/x.parquet", 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "missing"); err == nil {
		t.Fatal("get of a missing object succeeded")
	}
	if _, err := s.List(ctx, "_delta_log/", ""); err != nil {
		t.Fatal(err)
	}
	must(s.Delete(ctx, "a/x.parquet"))
	got := [4]int64{r.Get.Load(), r.Put.Load(), r.List.Load(), r.Delete.Load()}
	if want := [4]int64{3, 2, 1, 1}; got != want {
		t.Errorf("get, put, list, delete = %v, want %v", got, want)
	}
	if s.URI() != local.URI() {
		t.Errorf("URI %q, want %q", s.URI(), local.URI())
	}
}
