package delta_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/testenv/services"
)

// minio points the delta-rs helper scripts at the test MinIO and returns the
// spec's quick-start plugin_config for a table URI.
func minio(t *testing.T, svc services.Services) map[string]any {
	t.Helper()
	t.Setenv("PICOMQ_S3_ENDPOINT", svc.S3Endpoint)
	t.Setenv("PICOMQ_S3_ACCESS_KEY", svc.S3AccessKey)
	t.Setenv("PICOMQ_S3_SECRET_KEY", svc.S3SecretKey)
	t.Setenv("PICOMQ_S3_REGION", svc.S3Region)
	return map[string]any{
		"storage_backend_type": "s3",
		"aws_s3_access_key":    svc.S3AccessKey,
		"aws_s3_secret_key":    svc.S3SecretKey,
		"aws_s3_region":        svc.S3Region,
		"aws_s3_endpoint_url":  svc.S3Endpoint,
		"aws_s3_allow_http":    true,
	}
}

func with(cfg map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range cfg {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// The spec's quick start against MinIO: templated URIs, partitioned tables,
// a secret given only through the environment override.
func TestS3QuickStart(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	cfg := minio(t, svc)
	for _, region := range []string{"eu", "us"} {
		py(t, createOrders, fmt.Sprintf("s3://%s/orders/%s", bucket, region))
	}
	delete(cfg, "aws_s3_secret_key")
	h := newHarness(t, hostclient.Env("PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_AWS_S3_SECRET_KEY="+svc.S3SecretKey))
	inst := h.open("orders_delta", with(cfg, "table_uri", "s3://"+bucket+"/orders/{topic_segment[-1]}"))
	for n := range 3 {
		consume(t, inst, jsonBatch("orders.eu", uint64(n*2),
			fmt.Sprintf(`{"id":%d,"customer":"c","created_at":"2026-09-03T21:15:04Z","region":"eu"}`, n*2),
			fmt.Sprintf(`{"id":%d,"customer":"c","created_at":"2026-09-03T21:15:04Z","region":"north"}`, n*2+1)))
	}
	consume(t, inst, jsonBatch("orders.us", 0, `{"id":100,"region":"us"}`))
	// Replays change nothing.
	consume(t, inst, jsonBatch("orders.eu", 4, `{"id":4,"region":"eu"}`, `{"id":5,"region":"north"}`))

	eu := readRows(t, "s3://"+bucket+"/orders/eu", "id")
	if len(eu) != 6 || eu[5]["id"] != 5.0 || eu[5]["region"] != "north" {
		t.Fatalf("eu rows %v", eu)
	}
	if us := readRows(t, "s3://"+bucket+"/orders/us", "id"); len(us) != 1 {
		t.Fatalf("us rows %v", us)
	}
	if n := len(history(t, "s3://"+bucket+"/orders/eu")); n != 4 {
		t.Fatalf("%d versions", n)
	}
	// Partition directories and data files are where the spec says.
	out, err := svc.S3Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("orders/eu/")})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, o := range out.Contents {
		k := strings.TrimPrefix(*o.Key, "orders/eu/")
		if strings.HasSuffix(k, ".snappy.parquet") {
			dirs = append(dirs, k[:strings.Index(k, "/")])
		}
	}
	if fmt.Sprint(dirs) != "[region=eu region=eu region=eu region=north region=north region=north]" {
		t.Fatalf("data files %v", dirs)
	}
	m, _ := inst.Metrics()
	for _, l := range inst.Logs() {
		if strings.Contains(l.Message, svc.S3SecretKey) {
			t.Fatalf("secret in logs: %s", l.Message)
		}
	}
	if strings.Contains(m, svc.S3SecretKey) {
		t.Fatalf("secret in metrics: %s", m)
	}
}

func TestS3ConcurrentWritersLoseNothing(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	cfg := minio(t, svc)
	uri := "s3://" + bucket + "/events"
	py(t, createEvents, uri)
	wantIDs(t, uri, writeConcurrently(t, with(cfg, "table_uri", uri), 3, 8, 5))
}

func TestS3MissingTableAndBadCredentials(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	cfg := minio(t, svc)
	h := newHarness(t)
	err := h.openErr("m", with(cfg, "table_uri", "s3://"+bucket+"/none"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table s3://"+bucket+"/none")
	uri := "s3://" + bucket + "/events"
	py(t, createEvents, uri)
	// Keys the store refuses as an authentication failure: configuration.
	// (A key lacking a permission, AccessDenied, stays RETRY: see
	// TestS3ErrorShowsEndpointScheme.)
	err = h.openErr("m", with(cfg, "table_uri", uri, "aws_s3_secret_key", "wrong-secret-value"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table", "SignatureDoesNotMatch", "the store refused the configured key")
	if strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("secret leaked: %v", err)
	}
	err = h.openErr("m", with(cfg, "table_uri", uri, "aws_s3_access_key", "picomq-unknown-key"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table", "InvalidAccessKeyId", "the store refused the configured key")
	// A bucket that does not exist: the store answered no, as for a
	// missing table.
	err = h.openErr("m", with(cfg, "table_uri", "s3://picomq-no-such-bucket-0/events"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table s3://picomq-no-such-bucket-0/events", `bucket "picomq-no-such-bucket-0" does not exist`)
}

// An s3:// table without keys where the AWS default chain finds no
// credentials (no keys, no files, no web identity, no container endpoint,
// instance metadata refusing connections, as in a pod whose identity is
// not there yet): RETRY at open, saying what the chain tried and that the
// runtime opens the sink again later.
func TestS3NoCredentialsIsRetry(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	cfg := minio(t, svc)
	delete(cfg, "aws_s3_access_key")
	delete(cfg, "aws_s3_secret_key")
	h := newHarness(t, hostclient.Env("AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_PROFILE=",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_WEB_IDENTITY_TOKEN_FILE=", "AWS_ROLE_ARN=",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=",
		"AWS_EC2_METADATA_DISABLED=", "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:1"))
	err := h.openErr("m", with(cfg, "table_uri", "s3://"+bucket+"/events"))
	wantStatus(t, err, hostclient.StatusRetry, "Failed to load Delta table s3://"+bucket+"/events",
		"the AWS default credential chain found no credentials", "AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"instance metadata", "the runtime opens the sink again later")
}

// An S3 error names the endpoint with its real scheme. The SDK's own text
// says "https response error" for every endpoint, which sent operators of
// a plain-http MinIO looking for a TLS problem.
func TestS3ErrorShowsEndpointScheme(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied.</Message><RequestId>req-1</RequestId></Error>`)
	}))
	defer srv.Close()
	err := newHarness(t).openErr("scheme", map[string]any{
		"table_uri": "s3://bucket/events", "storage_backend_type": "s3", "aws_s3_access_key": "a", "aws_s3_secret_key": "s",
		"aws_s3_region": "r", "aws_s3_endpoint_url": srv.URL, "aws_s3_allow_http": true,
	})
	wantStatus(t, err, hostclient.StatusRetry, "Failed to load Delta table s3://bucket/events", "HTTP 403 from "+srv.URL,
		"AccessDenied: Access Denied.")
	if strings.Contains(err.Error(), "https") {
		t.Fatalf("message names https for an http endpoint: %v", err)
	}
}
