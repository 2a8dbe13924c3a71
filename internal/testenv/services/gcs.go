package services

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// GCSProject is the project test buckets are created in (fake-gcs-server
// accepts any).
const GCSProject = "picomq-test"

// GCSClient talks to the test fake-gcs-server's JSON API over plain HTTP,
// unauthenticated. It is deliberately not the Delta sink's GCS code, so that
// tests read back what the sink wrote with a reader of their own.
type GCSClient struct {
	base string // e.g. http://127.0.0.1:4443
	http *http.Client
}

// GCSError is an answer other than 2xx.
type GCSError struct {
	Status int
	Body   string
}

func (e *GCSError) Error() string {
	return fmt.Sprintf("fake-gcs-server: HTTP %d: %s", e.Status, e.Body)
}

// GCSClient returns a client for the test fake-gcs-server.
func (s Services) GCSClient(t testing.TB) *GCSClient {
	t.Helper()
	if s.GCSEndpoint == "" {
		t.Fatalf("services: no fake-gcs-server endpoint: call RequireGCS")
	}
	return &GCSClient{base: s.GCSEndpoint, http: &http.Client{Timeout: 60 * time.Second}}
}

func (c *GCSClient) do(ctx context.Context, method, path string, q url.Values, body []byte, out any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return &GCSError{Status: resp.StatusCode, Body: string(b)}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// CreateBucket creates a bucket.
func (c *GCSClient) CreateBucket(ctx context.Context, bucket string) error {
	b, _ := json.Marshal(map[string]string{"name": bucket})
	return c.do(ctx, http.MethodPost, "/storage/v1/b", url.Values{"project": {GCSProject}}, b, nil)
}

// DeleteBucket deletes an empty bucket.
func (c *GCSClient) DeleteBucket(ctx context.Context, bucket string) error {
	return c.do(ctx, http.MethodDelete, "/storage/v1/b/"+url.PathEscape(bucket), nil, nil, nil)
}

// BucketExists reports whether the bucket exists.
func (c *GCSClient) BucketExists(ctx context.Context, bucket string) (bool, error) {
	err := c.do(ctx, http.MethodGet, "/storage/v1/b/"+url.PathEscape(bucket), nil, nil, nil)
	if e, ok := err.(*GCSError); ok && e.Status == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// Upload writes an object (a media upload); ifAbsent adds
// ifGenerationMatch=0, which fails with HTTP 412 if the object exists.
func (c *GCSClient) Upload(ctx context.Context, bucket, name string, data []byte, ifAbsent bool) error {
	q := url.Values{"uploadType": {"media"}, "name": {name}}
	if ifAbsent {
		q.Set("ifGenerationMatch", "0")
	}
	u := c.base + "/upload/storage/v1/b/" + url.PathEscape(bucket) + "/o?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return &GCSError{Status: resp.StatusCode, Body: string(b)}
	}
	return nil
}

// List returns the names of the objects under prefix, in order.
func (c *GCSClient) List(ctx context.Context, bucket, prefix string) ([]string, error) {
	var names []string
	q := url.Values{"prefix": {prefix}}
	for {
		var page struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
			NextPageToken string `json:"nextPageToken"`
		}
		if err := c.do(ctx, http.MethodGet, "/storage/v1/b/"+url.PathEscape(bucket)+"/o", q, nil, &page); err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			names = append(names, it.Name)
		}
		if page.NextPageToken == "" {
			return names, nil
		}
		q.Set("pageToken", page.NextPageToken)
	}
}

// Delete deletes an object.
func (c *GCSClient) Delete(ctx context.Context, bucket, name string) error {
	return c.do(ctx, http.MethodDelete, "/storage/v1/b/"+url.PathEscape(bucket)+"/o/"+url.PathEscape(name), nil, nil, nil)
}

// NewGCSBucket creates an empty bucket for this test. t.Cleanup deletes
// every object in it and then the bucket.
func (s Services) NewGCSBucket(t testing.TB) string {
	t.Helper()
	name := "picomq-t-" + randomHex(6)
	c := s.GCSClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.CreateBucket(ctx, name); err != nil {
		t.Fatalf("services: create bucket %s at %s: %v\nIs fake-gcs-server running? buildscripts/services.sh start", name, s.GCSEndpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		names, err := c.List(ctx, name, "")
		if e, ok := err.(*GCSError); ok && e.Status == http.StatusNotFound {
			return
		}
		if err != nil {
			t.Errorf("services: empty bucket %s: %v", name, err)
			return
		}
		for _, o := range names {
			if err := c.Delete(ctx, name, o); err != nil {
				if e, ok := err.(*GCSError); !ok || e.Status != http.StatusNotFound {
					t.Errorf("services: empty bucket %s: %v", name, err)
					return
				}
			}
		}
		if err := c.DeleteBucket(ctx, name); err != nil {
			if e, ok := err.(*GCSError); !ok || e.Status != http.StatusNotFound {
				t.Errorf("services: delete bucket %s: %v", name, err)
			}
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
