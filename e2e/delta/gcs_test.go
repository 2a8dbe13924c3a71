package delta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/testenv/services"
)

// The MinIO end-to-end suite (s3_test.go) on Google Cloud Storage, against
// fake-gcs-server. delta-rs reads gs:// tables from the emulator but cannot
// write them (object_store uploads with the XML API, which fake-gcs-server
// does not serve), so each table is created by delta-rs in a local
// directory and uploaded as is; everything after that goes through the sink
// and is read back by delta-rs from gs://.

// fakeGCS points the delta-rs helper scripts at the test fake-gcs-server and
// returns the quick-start plugin_config and the marker that the service
// account key's private key is.
func fakeGCS(t *testing.T, svc services.Services) (map[string]any, string) {
	t.Helper()
	key, marker := svc.GCSServiceAccountKey()
	opts, _ := json.Marshal(map[string]string{"google_service_account_key": key})
	t.Setenv("PICOMQ_DELTA_STORAGE_OPTIONS", string(opts))
	return map[string]any{
		"storage_backend_type":    "gcs",
		"gcs_service_account_key": key,
		"gcs_endpoint_url":        svc.GCSEndpoint,
	}, marker
}

// createInGCS creates a table with a delta-rs script in a local directory
// and uploads it to gs://bucket/prefix.
func createInGCS(t *testing.T, svc services.Services, script, bucket, prefix string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "table")
	py(t, script, fileURI(dir))
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
	return "gs://" + bucket + "/" + prefix
}

func gcsObjects(t *testing.T, svc services.Services, bucket, prefix string) []string {
	t.Helper()
	names, err := svc.GCSClient(t).List(context.Background(), bucket, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = strings.TrimPrefix(n, prefix)
	}
	return names
}

// The spec's quick start on GCS: templated URIs, partitioned tables,
// replays that add nothing, the key given only through the environment
// override and never shown.
func TestGCSQuickStart(t *testing.T) {
	svc := services.RequireGCS(t)
	bucket := svc.NewGCSBucket(t)
	cfg, marker := fakeGCS(t, svc)
	for _, region := range []string{"eu", "us"} {
		createInGCS(t, svc, createOrders, bucket, "orders/"+region)
	}
	key := cfg["gcs_service_account_key"].(string)
	delete(cfg, "gcs_service_account_key")
	h := newHarness(t, hostclient.Env("PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_GCS_SERVICE_ACCOUNT_KEY="+key))
	inst := h.open("orders_delta", with(cfg, "table_uri", "gs://"+bucket+"/orders/{topic_segment[-1]}"))
	for n := range 3 {
		consume(t, inst, jsonBatch("orders.eu", uint64(n*2),
			fmt.Sprintf(`{"id":%d,"customer":"c","created_at":"2026-09-03T21:15:04Z","region":"eu"}`, n*2),
			fmt.Sprintf(`{"id":%d,"customer":"c","created_at":"2026-09-03T21:15:04Z","region":"north"}`, n*2+1)))
	}
	consume(t, inst, jsonBatch("orders.us", 0, `{"id":100,"region":"us"}`))
	// Replays change nothing.
	consume(t, inst, jsonBatch("orders.eu", 4, `{"id":4,"region":"eu"}`, `{"id":5,"region":"north"}`))

	eu := readRows(t, "gs://"+bucket+"/orders/eu", "id")
	if len(eu) != 6 || eu[5]["id"] != 5.0 || eu[5]["region"] != "north" || eu[0]["created_at"] != "2026-09-03T21:15:04+00:00" {
		t.Fatalf("eu rows %v", eu)
	}
	if us := readRows(t, "gs://"+bucket+"/orders/us", "id"); len(us) != 1 {
		t.Fatalf("us rows %v", us)
	}
	if n := storeVersions(t, "gs://"+bucket+"/orders/eu"); n != 4 {
		t.Fatalf("%d versions", n)
	}
	if got := partitionDirs(gcsObjects(t, svc, bucket, "orders/eu/")); got != "[region=eu region=eu region=eu region=north region=north region=north]" {
		t.Fatalf("data files %v", got)
	}
	noSecret(t, inst, marker)
}

func TestGCSConcurrentWritersLoseNothing(t *testing.T) {
	svc := services.RequireGCS(t)
	bucket := svc.NewGCSBucket(t)
	cfg, _ := fakeGCS(t, svc)
	uri := createInGCS(t, svc, createEvents, bucket, "events")
	const writers, batches, per = 3, 8, 5
	wantIDs(t, uri, writeConcurrently(t, with(cfg, "table_uri", uri), writers, batches, per))
	if n := storeVersions(t, uri); n != 1+writers*batches {
		t.Fatalf("%d versions, want %d", n, 1+writers*batches)
	}
}

func TestGCSMissingTableAndBadCredentials(t *testing.T) {
	svc := services.RequireGCS(t)
	bucket := svc.NewGCSBucket(t)
	cfg, marker := fakeGCS(t, svc)
	h := newHarness(t)
	err := h.openErr("m", with(cfg, "table_uri", "gs://"+bucket+"/none"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table gs://"+bucket+"/none")

	// A bucket that does not exist: the store answered no, as for a
	// missing table.
	err = h.openErr("m", with(cfg, "table_uri", "gs://picomq-no-such-bucket-0/events"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table gs://picomq-no-such-bucket-0/events", `bucket "picomq-no-such-bucket-0" does not exist`)

	uri := createInGCS(t, svc, createEvents, bucket, "events")
	// Not a service account key: refused at open, without quoting it.
	for _, bad := range []string{`{"type":"authorized_user","refresh_token":"` + marker + `"}`, "not json " + marker} {
		err = h.openErr("m", with(cfg, "table_uri", uri, "gcs_service_account_key", bad))
		wantStatus(t, err, hostclient.StatusBadConfig, "Invalid storage configuration: gcs_service_account_key is not")
		if strings.Contains(err.Error(), marker) {
			t.Fatalf("secret leaked: %v", err)
		}
	}
	// Against an authenticated (https) endpoint the private key must parse:
	// the emulator key's does not, and open() says so without quoting it.
	key := cfg["gcs_service_account_key"].(string)
	err = h.openErr("m", with(cfg, "table_uri", uri, "gcs_endpoint_url", "https://127.0.0.1:1"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Invalid storage configuration: gcs_service_account_key: private_key is not")
	if strings.Contains(err.Error(), marker) || strings.Contains(err.Error(), key) {
		t.Fatalf("secret leaked: %v", err)
	}
	// An account key that is not base64, likewise.
	err = h.openErr("m", map[string]any{"table_uri": "az://c/t", "storage_backend_type": "azure", "azure_storage_account_name": "a",
		"azure_container_name": "c", "azure_storage_account_key": "not-base64 " + marker})
	wantStatus(t, err, hostclient.StatusBadConfig, "Invalid storage configuration: azure_storage_account_key is not a base64 account key")
	if strings.Contains(err.Error(), marker) {
		t.Fatalf("secret leaked: %v", err)
	}

	// The spec's message for a missing key.
	err = h.openErr("m", map[string]any{"table_uri": uri, "storage_backend_type": "gcs"})
	wantStatus(t, err, hostclient.StatusBadConfig, "Invalid storage configuration: GCS backend requires 'gcs_service_account_key'")
}
