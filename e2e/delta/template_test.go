package delta_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/testenv/services"
)

// escapingTopics are topics that, substituted into <base>/{topic}, name a
// table beside base/ once the URL is decoded and its dot segments resolved.
var escapingTopics = []string{"../other", "%2e%2e/other", "%2E./other", "ok/../../other"}

// fileTree lists every file under root with its size.
func fileTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
		t.Fatal(err)
	}
	return out
}

// A topic cannot move its table out of the template's directory: the batch
// is refused as FATAL naming the topic, and nothing is written anywhere,
// least of all into the table beside base/ that the topic aims at.
func TestFileTopicCannotLeaveTemplateDirectory(t *testing.T) {
	root := t.TempDir()
	other := fileURI(filepath.Join(root, "other"))
	ok := fileURI(filepath.Join(root, "base", "ok"))
	py(t, createEvents, other)
	py(t, createEvents, ok)
	before := fileTree(t, root)

	h := newHarness(t)
	inst := h.open("escape", map[string]any{"table_uri": fileURI(filepath.Join(root, "base")) + "/{topic}"})
	for _, topic := range escapingTopics {
		wantStatus(t, inst.Consume(events(topic, 0, 2)), hostclient.StatusFatal,
			fmt.Sprintf("topic %q", topic), `may not make the path segment ".."`)
	}
	if after := fileTree(t, root); !slices.Equal(after, before) {
		t.Fatalf("files changed by refused batches:\nbefore %v\nafter  %v", before, after)
	}
	wantIDs(t, other, "")

	consume(t, inst, events("ok", 0, 2)) // a plain topic still resolves
	wantIDs(t, ok, "0,1")
}

// The same on an object store: nothing appears outside base/ in the bucket.
func TestS3TopicCannotLeaveTemplateDirectory(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	cfg := minio(t, svc)
	py(t, createEvents, "s3://"+bucket+"/other")
	py(t, createEvents, "s3://"+bucket+"/base/ok")
	list := func() []string {
		t.Helper()
		keys, err := services.Keys(context.Background(), svc.S3Client(), bucket, "")
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	before := list()

	h := newHarness(t)
	inst := h.open("escape", with(cfg, "table_uri", "s3://"+bucket+"/base/{topic}"))
	for _, topic := range escapingTopics {
		wantStatus(t, inst.Consume(events(topic, 0, 2)), hostclient.StatusFatal,
			fmt.Sprintf("topic %q", topic), `may not make the path segment ".."`)
	}
	if after := list(); !slices.Equal(after, before) {
		t.Fatalf("objects changed by refused batches:\nbefore %v\nafter  %v", before, after)
	}
	wantIDs(t, "s3://"+bucket+"/other", "")

	consume(t, inst, events("ok", 0, 2))
	wantIDs(t, "s3://"+bucket+"/base/ok", "0,1")
	for _, k := range list() {
		if !strings.HasPrefix(k, "base/ok/") && !strings.HasPrefix(k, "other/") {
			t.Fatalf("object %q outside the tables", k)
		}
	}
}
