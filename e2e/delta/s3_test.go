package delta_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// The S3 cases that need the C host's own process environment or a fake
// S3; the rest run on every store in deltatest's suite (suite_test.go).

// minio points the delta-rs helper scripts at the test MinIO and returns the
// spec's quick-start plugin_config for a table URI.
func minio(t *testing.T, svc services.Services) map[string]any {
	t.Helper()
	for _, kv := range deltatest.S3ReaderEnv(svc) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return deltatest.S3Config(svc)
}

// An s3:// table without keys where the AWS default chain finds no
// credentials (no keys, no files, no web identity, no container endpoint,
// instance metadata refusing connections, as in a pod whose identity is
// not there yet): RETRY at open, saying what the chain tried and that the
// runtime opens the sink again later. The chain reads the process
// environment, which only the C host's is the test's to set.
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
