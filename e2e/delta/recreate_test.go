package delta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// tableID is the table's metaData.id as delta-rs reads it.
func tableID(t *testing.T, uri string) string {
	t.Helper()
	var id string
	out := py(t, `dump(DeltaTable(uri, storage_options=opts).metadata().id)`, uri)
	if err := json.Unmarshal([]byte(out), &id); err != nil || id == "" {
		t.Fatalf("table id: %v: %s", err, out)
	}
	return id
}

// createEventsAt creates the events table and appends sys.argv[2] single-row
// commits (ids 1000, 1001, ...) with delta-rs: the table ends at that version.
const createEventsAt = createEvents + `
for i in range(int(sys.argv[2])):
    write_deltalake(uri, pa.Table.from_pylist([{"id": 1000 + i, "body": "other"}], schema=schema), mode="append", storage_options=opts)
`

// recreateUnderSink commits three batches (versions 1..3), lets remove
// delete the table, creates a new one at the same URI with delta-rs at
// version `versions`, and checks that the sink notices: the next batch fails
// with RETRY naming the URI and both table ids, its redelivery lands in the
// new table exactly once, and delta-rs reads the new table whole.
func recreateUnderSink(t *testing.T, uri string, cfg map[string]any, remove func(), versions int) {
	py(t, createEvents, uri)
	oldID := tableID(t, uri)
	inst := newHarness(t).open("ev", cfg)
	for n := range 3 {
		consume(t, inst, events("events", n*2, 2))
	}
	remove()
	py(t, createEventsAt, uri, fmt.Sprint(versions))
	newID := tableID(t, uri)

	b := events("events", 6, 2)
	wantStatus(t, inst.Consume(b), hostclient.StatusRetry, uri, oldID, newID)
	b.Attempt = 2
	consume(t, inst, b)
	consume(t, inst, events("events", 8, 2))

	want := span(6, 9)
	for i := range versions {
		want += fmt.Sprintf(",%d", 1000+i)
	}
	wantIDs(t, uri, want)
	if h := history(t, uri); len(h) != versions+3 || h[0]["version"] != float64(versions+2) {
		t.Fatalf("history %v, want versions 0..%d", h, versions+2)
	}
	var warned bool
	for _, l := range inst.Logs() {
		if l.Level == slog.LevelWarn && contains(l.Message, "was replaced", oldID, newID) {
			warned = true
		}
	}
	if !warned {
		t.Fatalf("no warning naming both table ids: %v", inst.Logs())
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// A table deleted and created again under an open instance, with the new
// table behind the sink's cached version (version 0) and ahead of it (5).
func TestRecreatedTableIsNoticed(t *testing.T) {
	for _, versions := range []int{0, 5} {
		t.Run(fmt.Sprintf("new table at version %d", versions), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "events")
			uri := fileURI(dir)
			recreateUnderSink(t, uri, map[string]any{"table_uri": uri}, func() {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			}, versions)
		})
	}
}

func TestS3RecreatedTableIsNoticed(t *testing.T) {
	svc := services.Require(t)
	for _, versions := range []int{0, 5} {
		t.Run(fmt.Sprintf("new table at version %d", versions), func(t *testing.T) {
			bucket := svc.NewBucket(t)
			cfg := minio(t, svc)
			uri := "s3://" + bucket + "/events"
			recreateUnderSink(t, uri, with(cfg, "table_uri", uri), func() {
				ctx := context.Background()
				client := svc.S3Client()
				keys, err := services.Keys(ctx, client, bucket, "events/")
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err != nil {
						t.Fatal(err)
					}
				}
			}, versions)
		})
	}
}

// The check that the log still ends where the sink's snapshot does must come
// after the batch's files are uploaded, right before the commit's put: a
// table replaced while a batch uploads would otherwise get our commit on top
// of its own log, past its end, and the batch acknowledged. A proxy in front
// of MinIO holds the batch's first data-file upload until the sink has read
// the commit its snapshot ended on (at most 2 s: a sink that checks only
// after uploading never reads it first), replaces the table's log with a new
// table's (version 0, another id), and lets the upload go on.
func TestTableReplacedWhileABatchUploadsIsNoticed(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	cfg := minio(t, svc)
	uri := "s3://" + bucket + "/events"
	py(t, createEvents, uri)
	oldID := tableID(t, uri)
	client := svc.S3Client()
	ctx := context.Background()
	obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("events/_delta_log/00000000000000000000.json")})
	if err != nil {
		t.Fatal(err)
	}
	v0, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	const newID = "00000000-0000-4000-8000-00000000feed"
	replacement := strings.Replace(string(v0), oldID, newID, 1)

	target, err := url.Parse(svc.S3Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	watching, replaced := false, false
	headRead := make(chan struct{})
	var headOnce sync.Once
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if watching && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/_delta_log/00000000000000000003.json") {
			headOnce.Do(func() { close(headRead) })
		}
		hold := watching && !replaced && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".parquet")
		if hold {
			replaced = true
		}
		mu.Unlock()
		if hold {
			select {
			case <-headRead:
			case <-time.After(2 * time.Second):
			}
			keys, err := services.Keys(ctx, client, bucket, "events/_delta_log/")
			if err != nil {
				t.Error(err)
			}
			for _, k := range keys {
				if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err != nil {
					t.Error(err)
				}
			}
			if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket),
				Key: aws.String("events/_delta_log/00000000000000000000.json"), Body: strings.NewReader(replacement)}); err != nil {
				t.Error(err)
			}
		}
		proxy.ServeHTTP(w, r) // the Host header stays the proxy's: the request's signature covers it
	}))
	defer srv.Close()

	inst := newHarness(t).open("ev", with(cfg, "table_uri", uri, "aws_s3_endpoint_url", srv.URL))
	for n := range 3 {
		consume(t, inst, events("events", n*2, 2)) // versions 1..3
	}
	mu.Lock()
	watching = true
	mu.Unlock()
	wantStatus(t, inst.Consume(events("events", 6, 2)), hostclient.StatusRetry, "was replaced", oldID, newID)
	mu.Lock()
	if !replaced {
		t.Fatal("the proxy never replaced the table")
	}
	mu.Unlock()
	keys, err := services.Keys(ctx, client, bucket, "events/_delta_log/")
	if err != nil || len(keys) != 1 {
		t.Fatalf("the new table's log: %v (%v), want only its version 0", keys, err)
	}
}
