package objstore_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

func gcsOptions(svc services.Services) objstore.Options {
	key, _ := svc.GCSServiceAccountKey()
	return objstore.Options{GCS: objstore.GCSOptions{ServiceAccountKey: key, Endpoint: svc.GCSEndpoint}}
}

// The local store's contract against fake-gcs-server: an upload with
// ifGenerationMatch=0 answers 412 for a taken version, exactly one racer
// wins, listing starts after startAfter.
func TestGCSStoreContract(t *testing.T) {
	svc := services.RequireGCS(t)
	bucket := svc.NewGCSBucket(t)
	s, err := openURI(context.Background(), "gs://"+bucket+"/tables/t1", gcsOptions(svc))
	if err != nil {
		t.Fatal(err)
	}
	storeContract(t, s)
	if s.URI() != "gs://"+bucket+"/tables/t1" {
		t.Errorf("URI %s", s.URI())
	}
	// The endpoint may also be given as the JSON API base.
	opts := gcsOptions(svc)
	opts.GCS.Endpoint = svc.GCSEndpoint + "/storage/v1/"
	s2, _ := openURI(context.Background(), "gs://"+bucket+"/tables/t1", opts)
	if b, err := s2.Get(context.Background(), "_delta_log/00000000000000000001.json"); err != nil || string(b) != "1" {
		t.Fatalf("through the JSON API base: %q %v", b, err)
	}
}

func TestGCSErrorsMapToSentinels(t *testing.T) {
	svc := services.RequireGCS(t)
	ctx := context.Background()
	s, err := openURI(ctx, "gs://no-such-bucket-picomq/t", gcsOptions(svc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "_delta_log/x.json"); !errors.Is(err, deltalog.ErrNotFound) {
		t.Fatalf("get from a missing bucket: %v", err)
	}
	if err := s.Delete(ctx, "x"); err != nil {
		t.Fatalf("delete in a missing bucket: %v", err)
	}
	opts := gcsOptions(svc)
	opts.GCS.Endpoint = "http://127.0.0.1:1"
	down, _ := openURI(ctx, "gs://b/t", opts)
	if _, err := down.List(ctx, "_delta_log/", ""); !deltalog.IsTransient(err) {
		t.Fatalf("unreachable store: %v", err)
	}
	if err := down.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("{}")); !deltalog.IsTransient(err) {
		t.Fatalf("unreachable store: %v", err)
	}
}

// fakeGCS answers every request with status and a JSON API error.
func fakeGCS(t *testing.T, status int, reason string) (string, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": reason,
			"errors": []any{map[string]any{"reason": reason, "message": reason}}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &calls
}

// Credentials the service refuses fail for good; throttling and 5xx are
// transient.
func TestGCSStatusMapping(t *testing.T) {
	ctx := context.Background()
	key, _ := services.Services{}.GCSServiceAccountKey()
	for _, c := range []struct {
		status    int
		transient bool
	}{{401, false}, {403, false}, {429, true}, {503, true}} {
		ep, calls := fakeGCS(t, c.status, "reason"+http.StatusText(c.status))
		s, err := openURI(ctx, "gs://b/t", objstore.Options{GCS: objstore.GCSOptions{ServiceAccountKey: key, Endpoint: ep}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.List(ctx, "_delta_log/", "")
		if err == nil || deltalog.IsTransient(err) != c.transient || errors.Is(err, deltalog.ErrNotFound) {
			t.Errorf("HTTP %d: %v", c.status, err)
		}
		if c.transient && calls.Load() < 2 {
			t.Errorf("HTTP %d: not retried (%d calls)", c.status, calls.Load())
		}
		before := calls.Load()
		err = s.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("{}"))
		if err == nil || deltalog.IsTransient(err) != c.transient || errors.Is(err, deltalog.ErrAlreadyExists) {
			t.Errorf("HTTP %d on upload: %v", c.status, err)
		}
		if n := calls.Load() - before; (n > 1) != c.transient {
			t.Errorf("HTTP %d on upload: %d attempts", c.status, n)
		}
	}
}

func serviceAccountKey(t *testing.T, tokenURI string) (string, string) {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(rk)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	b, _ := json.Marshal(map[string]any{"type": "service_account", "project_id": "p", "private_key_id": "k1",
		"private_key": pemKey, "client_email": "sink@p.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURI})
	return string(b), pemKey
}

// A key the token endpoint rejects, or that is not a key at all, is not
// transient, and no part of it shows in the error.
func TestGCSBadKeyIsNotTransient(t *testing.T) {
	ctx := context.Background()
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`))
	}))
	defer tokens.Close()
	key, pemKey := serviceAccountKey(t, tokens.URL)
	// An https endpoint: requests are authenticated, so the token (or the
	// self-signed JWT) is made before anything is sent to the store.
	broken := strings.Replace(key, "MII", "XXX", 1)
	for name, k := range map[string]string{"rejected": key, "garbled": broken} {
		s, err := openURI(ctx, "gs://b/t", objstore.Options{Backend: objstore.BackendGCS, GCS: objstore.GCSOptions{ServiceAccountKey: k, Endpoint: "https://127.0.0.1:1"}})
		if err == nil {
			_, err = s.List(ctx, "_delta_log/", "")
		}
		if err == nil {
			t.Fatalf("%s key: no error", name)
		}
		if deltalog.IsTransient(err) || errors.Is(err, deltalog.ErrNotFound) {
			t.Errorf("%s key: transient: %v", name, err)
		}
		for _, secret := range []string{k, pemKey, strings.Split(pemKey, "\n")[1]} {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("%s key: key material in %v", name, err)
			}
		}
	}
}

func TestGCSURIsAndKeys(t *testing.T) {
	ctx := context.Background()
	key, marker := services.Services{GCSEndpoint: "http://127.0.0.1:1"}.GCSServiceAccountKey()
	if _, err := openURI(ctx, "gs://b/t", objstore.Options{}); err == nil || !containsInvalid(err) || !strings.Contains(err.Error(), `backend = "gcs"`) {
		t.Errorf("gs:// without gcs options: %v", err)
	}
	if _, err := openURI(ctx, "gs:///t", objstore.Options{GCS: objstore.GCSOptions{ServiceAccountKey: key}}); err == nil || !containsInvalid(err) {
		t.Errorf("gs:// without a bucket: %v", err)
	}
	for _, k := range []string{"{not json " + marker, `{"type":"authorized_user","private_key":"` + marker + `"}`, `{"type":"external_account"}`} {
		_, err := openURI(ctx, "gs://b/t", objstore.Options{Backend: objstore.BackendGCS, GCS: objstore.GCSOptions{ServiceAccountKey: k}})
		if err == nil || strings.Contains(err.Error(), marker) || strings.Contains(err.Error(), "{") && strings.Contains(err.Error(), k) {
			t.Errorf("key %.20s…: %v", k, err)
		}
	}
	if err := (objstore.Options{Backend: objstore.BackendGCS, GCS: objstore.GCSOptions{ServiceAccountKey: key, Endpoint: "http://127.0.0.1:1"}}).Validate(); err != nil {
		t.Errorf("emulator key: %v", err)
	}
	for _, ep := range []string{"ftp://x", "localhost:4443", "http://x/?a=b"} {
		if err := (objstore.Options{Backend: objstore.BackendGCS, GCS: objstore.GCSOptions{ServiceAccountKey: key, Endpoint: ep}}).Validate(); err == nil {
			t.Errorf("endpoint %s accepted", ep)
		}
	}
	s, err := openURI(ctx, "gs://b/a/b/", objstore.Options{GCS: objstore.GCSOptions{ServiceAccountKey: key, Endpoint: "http://127.0.0.1:1"}})
	if err != nil || s.URI() != "gs://b/a/b" {
		t.Errorf("%v %v", s, err)
	}
}

// Names with every kind of character a Delta table can produce (escaped
// partition values hold '%', '=' and '+'; spaces and non-ASCII too) go to
// fake-gcs-server and come back unchanged, and another client sees them
// under the same names.
func TestGCSNamesRoundTrip(t *testing.T) {
	svc := services.RequireGCS(t)
	bucket := svc.NewGCSBucket(t)
	ctx := context.Background()
	s, err := openURI(ctx, "gs://"+bucket+"/tables/t 1", gcsOptions(svc))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"d=2026-01-01%2012%3A00/part-0.parquet", "k=a+b c/ü&?#;.parquet", "k=a+b c/x~y'z(1).parquet", "_delta_log/00000000000000000000.json"}
	for i, n := range names {
		if err := s.PutIfAbsent(ctx, n, []byte(n)); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if b, err := s.Get(ctx, n); err != nil || string(b) != n {
			t.Fatalf("get %s: %q %v", n, b, err)
		}
		if b, err := s.GetRange(ctx, n, 1, 3); err != nil || string(b) != n[1:4] {
			t.Fatalf("range %s: %q %v", n, b, err)
		}
		if i == 1 {
			if err := s.PutIfAbsent(ctx, n, []byte("again")); !errors.Is(err, deltalog.ErrAlreadyExists) {
				t.Fatalf("second put-if-absent %s: %v", n, err)
			}
		}
	}
	// Byte-wise order: 'ü' (0xC3 0xBC) sorts after 'x'.
	got, err := s.List(ctx, "k=a+b c/", names[2])
	if err != nil || len(got) != 1 || got[0].Path != names[1] || got[0].Size != int64(len(names[1])) || got[0].ModTime.IsZero() {
		t.Fatalf("list after %s: %+v %v", names[2], got, err)
	}
	other, err := svc.GCSClient(t).List(ctx, bucket, "tables/t 1/")
	if err != nil || len(other) != len(names) {
		t.Fatalf("seen by another client: %q %v", other, err)
	}
	for _, n := range names {
		if err := s.Delete(ctx, n); err != nil {
			t.Fatalf("delete %s: %v", n, err)
		}
	}
	if other, _ := svc.GCSClient(t).List(ctx, bucket, "tables/"); len(other) != 0 {
		t.Fatalf("left after deletes: %q", other)
	}
}

// Without gcs_endpoint_url, STORAGE_EMULATOR_HOST names the emulator, as it
// does for Google's client libraries: requests carry no credentials, so an
// emulator key (whose private key does not parse) passes.
func TestGCSEmulatorHostFromEnvironment(t *testing.T) {
	svc := services.RequireGCS(t)
	bucket := svc.NewGCSBucket(t)
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(svc.GCSEndpoint, "http://"))
	opts := gcsOptions(svc)
	opts.GCS.Endpoint = ""
	s, err := openURI(context.Background(), "gs://"+bucket+"/t", opts)
	if err != nil {
		t.Fatal(err)
	}
	storeContract(t, s)
}
