package objstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/picomq/heavy-sinks/e2e/services"
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
	s, err := objstore.Open(context.Background(), "s3://"+bucket+"/tables/t1", s3Options(svc))
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
	s, err := objstore.Open(ctx, "s3://no-such-bucket-picomq/t", s3Options(svc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "_delta_log/x.json"); !errors.Is(err, deltalog.ErrNotFound) {
		t.Fatalf("get from a missing bucket: %v", err)
	}
	opts := s3Options(svc)
	opts.S3.SecretKey = "wrong-secret"
	bad, _ := objstore.Open(ctx, "s3://"+svc.NewBucket(t)+"/t", opts)
	_, err = bad.List(ctx, "_delta_log/", "")
	if err == nil || errors.Is(err, deltalog.ErrNotFound) || deltalog.IsTransient(err) {
		t.Fatalf("bad credentials: %v", err)
	}
	opts = s3Options(svc)
	opts.S3.Endpoint = "http://127.0.0.1:1"
	down, _ := objstore.Open(ctx, "s3://b/t", opts)
	if _, err := down.List(ctx, "_delta_log/", ""); !deltalog.IsTransient(err) {
		t.Fatalf("unreachable store: %v", err)
	}
}
