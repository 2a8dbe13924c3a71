package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

func s3Options(svc services.Services) objstore.Options {
	return objstore.Options{S3: objstore.S3Options{AccessKey: svc.S3AccessKey, SecretKey: svc.S3SecretKey, Region: svc.S3Region,
		Endpoint: svc.S3Endpoint, AllowHTTP: true}}
}

// The same contract as the local store, against MinIO: conditional PUT
// answers 412 for a taken version, exactly one racer wins.
func TestS3StoreContract(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	s, err := openURI(context.Background(), "s3://"+bucket+"/tables/t1", s3Options(svc))
	if err != nil {
		t.Fatal(err)
	}
	storeContract(t, s)
	if s.URI() != "s3://"+bucket+"/tables/t1" {
		t.Errorf("URI %s", s.URI())
	}
}

func TestS3ErrorsMapToSentinels(t *testing.T) {
	svc := services.Require(t)
	ctx := context.Background()
	s, err := openURI(ctx, "s3://no-such-bucket-picomq/t", s3Options(svc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "_delta_log/x.json"); !errors.Is(err, deltalog.ErrNotFound) {
		t.Fatalf("get from a missing bucket: %v", err)
	}
	opts := s3Options(svc)
	opts.S3.SecretKey = "wrong-secret"
	bad, _ := openURI(ctx, "s3://"+svc.NewBucket(t)+"/t", opts)
	_, err = bad.List(ctx, "_delta_log/", "")
	if err == nil || errors.Is(err, deltalog.ErrNotFound) || deltalog.IsTransient(err) {
		t.Fatalf("bad credentials: %v", err)
	}
	opts = s3Options(svc)
	opts.S3.Endpoint = "http://127.0.0.1:1"
	down, _ := openURI(ctx, "s3://b/t", opts)
	if _, err := down.List(ctx, "_delta_log/", ""); !deltalog.IsTransient(err) {
		t.Fatalf("unreachable store: %v", err)
	}
}

// An answered S3 failure names the endpoint with its real scheme, not the
// SDK's fixed "https response error".
func TestS3ErrorNamesEndpointScheme(t *testing.T) {
	status := http.StatusForbidden
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("X-Amz-Request-Id", "req-7")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<Error><Code>Code%d</Code><Message>says no</Message></Error>`, status)
	}))
	defer srv.Close()
	ctx := context.Background()
	s, err := openURI(ctx, "s3://b/t", objstore.Options{S3: objstore.S3Options{AccessKey: "a", SecretKey: "s",
		Region: "r", Endpoint: srv.URL, AllowHTTP: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, status = range []int{http.StatusForbidden, http.StatusConflict} {
		_, err := s.Get(ctx, "_delta_log/x.json")
		want := fmt.Sprintf("s3 get s3://b/t/_delta_log/x.json: HTTP %d from %s: Code%d: says no (request id req-7)", status, srv.URL, status)
		if status == http.StatusConflict {
			want = fmt.Sprintf("s3 get s3://b/t/_delta_log/x.json: %v: HTTP %d from %s: Code%d: says no (request id req-7)", deltalog.ErrTransient, status, srv.URL, status)
		}
		if err == nil || err.Error() != want {
			t.Errorf("error:\n got %v\nwant %s", err, want)
		}
	}
}
