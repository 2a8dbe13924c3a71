package objstore_test

import (
	"context"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
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

func TestLocalStat(t *testing.T) {
	ctx := context.Background()
	local, err := objstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := local.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	var r objstore.Requests
	for _, s := range []objstore.Store{local, objstore.Counted(local, &r)} {
		stat := s.(deltalog.Stater)
		fi, ok, err := stat.Stat(ctx, "_delta_log/00000000000000000000.json")
		if err != nil || !ok || fi.Path != "_delta_log/00000000000000000000.json" || fi.Size != 3 || fi.ModTime.IsZero() {
			t.Errorf("%T: existing file: %+v %v %v", s, fi, ok, err)
		}
		for _, p := range []string{"_delta_log/00000000000000000001.json", "_delta_log", "missing/x.json"} {
			if fi, ok, err := stat.Stat(ctx, p); err != nil || ok {
				t.Errorf("%T: %s: %+v %v %v, want not found", s, p, fi, ok, err)
			}
		}
	}
	if r.List.Load() != 4 || r.Get.Load() != 0 {
		t.Errorf("counted stats: list %d, get %d; want 4 lists (a stat counts as the listing it replaces)", r.List.Load(), r.Get.Load())
	}
}
