package deltatest

// What a store holds, listed with the store's own client rather than
// through the sink or delta-rs.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

// Objects lists the objects (files) under path in the store, as names
// relative to path, sorted.
func (s *Store) Objects(path string) []string {
	s.t.Helper()
	prefix := path + "/"
	if path == "" {
		prefix = ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var names []string
	switch s.Backend {
	case File:
		dir := filepath.Join(strings.TrimPrefix(s.root, "file://"), filepath.FromSlash(path))
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			names = append(names, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			s.t.Fatal(err)
		}
	case S3:
		keys, err := services.Keys(ctx, s.svc.S3Client(), s.Bucket, prefix)
		if err != nil {
			s.t.Fatal(err)
		}
		names = keys
	case Azure:
		pager := s.svc.AzureContainerClient(s.t, s.Bucket).NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				s.t.Fatal(err)
			}
			for _, b := range page.Segment.BlobItems {
				names = append(names, *b.Name)
			}
		}
	case GCS:
		all, err := s.svc.GCSClient(s.t).List(ctx, s.Bucket, prefix)
		if err != nil {
			s.t.Fatal(err)
		}
		names = all
	}
	for i, n := range names {
		names[i] = strings.TrimPrefix(n, prefix)
	}
	sort.Strings(names)
	return names
}

// tree lists what the store holds: every object, and on File every file
// and directory with its size.
func (s *Store) tree() []string {
	s.t.Helper()
	if s.Backend != File {
		return s.Objects("")
	}
	root := strings.TrimPrefix(s.root, "file://")
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, fmt.Sprintf("%s %d", rel, info.Size()))
		return nil
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// UploadGCS uploads every file under dir to gs://bucket/prefix/.
func UploadGCS(t testing.TB, svc services.Services, dir, bucket, prefix string) {
	t.Helper()
	c := svc.GCSClient(t)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return c.Upload(context.Background(), bucket, prefix+"/"+filepath.ToSlash(rel), data, false)
	})
	if err != nil {
		t.Fatalf("upload table: %v", err)
	}
}
