package services

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

// GCSProject is the project test buckets are created in (fake-gcs-server
// accepts any).
const GCSProject = "picomq-test"

// GCSClient returns an unauthenticated client for the test fake-gcs-server.
// The caller closes it.
func (s Services) GCSClient(t testing.TB) *storage.Client {
	t.Helper()
	c, err := storage.NewClient(context.Background(), option.WithEndpoint(s.GCSEndpoint+"/storage/v1/"),
		option.WithoutAuthentication(), storage.WithJSONReads())
	if err != nil {
		t.Fatalf("services: fake-gcs-server client: %v", err)
	}
	return c
}

// NewGCSBucket creates an empty bucket for this test. t.Cleanup deletes
// every object in it and then the bucket.
func (s Services) NewGCSBucket(t testing.TB) string {
	t.Helper()
	name := "picomq-t-" + randomHex(6)
	c := s.GCSClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Bucket(name).Create(ctx, GCSProject, nil); err != nil {
		c.Close()
		t.Fatalf("services: create bucket %s at %s: %v\nIs fake-gcs-server running? buildscripts/services.sh start", name, s.GCSEndpoint, err)
	}
	t.Cleanup(func() {
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		b := c.Bucket(name)
		it := b.Objects(ctx, nil)
		for {
			o, err := it.Next()
			if errors.Is(err, iterator.Done) {
				break
			}
			if errors.Is(err, storage.ErrBucketNotExist) {
				return
			}
			if err != nil {
				t.Errorf("services: empty bucket %s: %v", name, err)
				return
			}
			if err := b.Object(o.Name).Delete(ctx); err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
				t.Errorf("services: empty bucket %s: %v", name, err)
				return
			}
		}
		if err := b.Delete(ctx); err != nil && !errors.Is(err, storage.ErrBucketNotExist) {
			t.Errorf("services: delete bucket %s: %v", name, err)
		}
	})
	return name
}

// GCSServiceAccountKey returns a service account key for fake-gcs-server:
// the shape the Delta sink checks (type, client_email, private_key), a
// private key that is a unique marker (to look for in logs), and the
// gcs_base_url / disable_oauth fields with which delta-rs (object_store)
// talks to an emulator. The emulator checks no credentials.
func (s Services) GCSServiceAccountKey() (key, marker string) {
	marker = "picomq-fake-private-key-" + randomHex(8)
	b, _ := json.Marshal(map[string]any{
		"type":           "service_account",
		"project_id":     GCSProject,
		"private_key_id": randomHex(8),
		"private_key":    "-----BEGIN PRIVATE KEY-----\n" + marker + "\n-----END PRIVATE KEY-----\n",
		"client_email":   "sink@" + GCSProject + ".iam.gserviceaccount.com",
		"client_id":      "1",
		"token_uri":      "http://127.0.0.1:1/token",
		"gcs_base_url":   s.GCSEndpoint,
		"disable_oauth":  true,
	})
	return string(b), marker
}
