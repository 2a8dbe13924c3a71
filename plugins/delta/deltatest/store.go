package deltatest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

// The backends a Store can be, in the order the suite runs them.
const (
	File  = "file"
	S3    = "s3"
	Azure = "azure"
	GCS   = "gcs"
)

// Backends are the object stores the suite runs its tests on: a local
// directory, S3 on MinIO, Azure Blob Storage on Azurite and GCS on
// fake-gcs-server.
var Backends = []string{File, S3, Azure, GCS}

// Store is one test's place for tables on one backend: a temporary
// directory, or a bucket (container) of its own that is deleted at the end
// of the test.
type Store struct {
	t *testing.T
	// Backend is one of Backends.
	Backend string
	// Bucket is the bucket or container; "" for File.
	Bucket string
	// Secrets are the store's secrets: no log line, error or metric may
	// carry them.
	Secrets []string
	// SecretKey is the plugin_config key of the store's main secret (the
	// one a deployment gives through the environment override); "" for
	// File.
	SecretKey string

	svc    services.Services
	root   string         // URI of the store's root, no trailing slash
	config map[string]any // the store's part of plugin_config
	env    []string       // what points the delta-rs scripts at the store
}

// NewStore sets up a store of backend for t. Without the services the test
// fails; it never skips.
func NewStore(t *testing.T, backend string) *Store {
	t.Helper()
	s := &Store{t: t, Backend: backend, config: map[string]any{}}
	// Each script is told both variables, so one set by the test process
	// (e2e tests point scripts at a store with t.Setenv) does not leak in.
	s3Env, optsEnv := []string{"PICOMQ_S3_ENDPOINT="}, ""
	switch backend {
	case File:
		s.root = "file://" + t.TempDir()
	case S3:
		s.svc = services.Require(t)
		s.Bucket = s.svc.NewBucket(t)
		s.root = "s3://" + s.Bucket
		s.config = S3Config(s.svc)
		s3Env = S3ReaderEnv(s.svc)
		s.SecretKey = "aws_s3_secret_key"
		s.Secrets = []string{s.svc.S3SecretKey}
	case Azure:
		s.svc = services.RequireAzure(t)
		s.Bucket = s.svc.NewAzureContainer(t)
		s.root = "az://" + s.Bucket
		s.config = AzureConfig(s.svc, s.Bucket)
		optsEnv = AzureReaderOptions(s.svc)
		s.SecretKey = "azure_storage_account_key"
		s.Secrets = []string{s.svc.AzureKey}
	case GCS:
		s.svc = services.RequireGCS(t)
		s.Bucket = s.svc.NewGCSBucket(t)
		s.root = "gs://" + s.Bucket
		var marker string
		s.config, marker = GCSConfig(s.svc)
		optsEnv = GCSReaderOptions(s.config)
		s.SecretKey = "gcs_service_account_key"
		// The marker is the key's private key: what must never show.
		s.Secrets = []string{marker}
	default:
		t.Fatalf("deltatest: no backend %q", backend)
	}
	s.env = append(s3Env, "PICOMQ_DELTA_STORAGE_OPTIONS="+optsEnv)
	return s
}

// S3Config is the storage part of plugin_config for the test MinIO: the
// spec's quick start.
func S3Config(svc services.Services) map[string]any {
	return map[string]any{
		"storage_backend_type": "s3",
		"aws_s3_access_key":    svc.S3AccessKey,
		"aws_s3_secret_key":    svc.S3SecretKey,
		"aws_s3_region":        svc.S3Region,
		"aws_s3_endpoint_url":  svc.S3Endpoint,
		"aws_s3_allow_http":    true,
	}
}

// S3ReaderEnv points Py's scripts at the test MinIO (Prelude reads it).
func S3ReaderEnv(svc services.Services) []string {
	return []string{"PICOMQ_S3_ENDPOINT=" + svc.S3Endpoint, "PICOMQ_S3_ACCESS_KEY=" + svc.S3AccessKey,
		"PICOMQ_S3_SECRET_KEY=" + svc.S3SecretKey, "PICOMQ_S3_REGION=" + svc.S3Region}
}

// AzureConfig is the storage part of plugin_config for container c of the
// test Azurite.
func AzureConfig(svc services.Services, c string) map[string]any {
	return map[string]any{
		"storage_backend_type":       "azure",
		"azure_storage_account_name": svc.AzureAccount,
		"azure_container_name":       c,
		"azure_storage_account_key":  svc.AzureKey,
		"azure_storage_endpoint_url": svc.AzureEndpoint,
	}
}

// AzureReaderOptions are delta-rs storage options (JSON, for
// PICOMQ_DELTA_STORAGE_OPTIONS) for the test Azurite.
func AzureReaderOptions(svc services.Services) string {
	b, _ := json.Marshal(map[string]string{
		"azure_storage_account_name": svc.AzureAccount, "azure_storage_account_key": svc.AzureKey,
		"azure_storage_endpoint": svc.AzureEndpoint, "azure_allow_http": "true",
	})
	return string(b)
}

// GCSConfig is the storage part of plugin_config for the test
// fake-gcs-server, and the marker that its service account key's private
// key is.
func GCSConfig(svc services.Services) (map[string]any, string) {
	key, marker := svc.GCSServiceAccountKey()
	return map[string]any{
		"storage_backend_type":    "gcs",
		"gcs_service_account_key": key,
		"gcs_endpoint_url":        svc.GCSEndpoint,
	}, marker
}

// GCSReaderOptions are delta-rs storage options (JSON, for
// PICOMQ_DELTA_STORAGE_OPTIONS) with cfg's service account key.
func GCSReaderOptions(cfg map[string]any) string {
	b, _ := json.Marshal(map[string]string{"google_service_account_key": cfg["gcs_service_account_key"].(string)})
	return string(b)
}

// URI is the URI of path (slash-separated, relative) in the store.
func (s *Store) URI(path string) string { return s.root + "/" + path }

// Config is a working plugin_config for the table at uri: the store's part
// plus table_uri, then kv (key, value, ...) on top.
func (s *Store) Config(uri string, kv ...any) map[string]any {
	return With(s.config, append([]any{"table_uri", uri}, kv...)...)
}

// With is a copy of cfg with kv (key, value, ...) set; a nil value removes
// the key.
func With(cfg map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range cfg {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// Py runs a delta-rs script (after Prelude) pointed at the store; the
// first argument is the table URI.
func (s *Store) Py(script string, args ...string) string {
	s.t.Helper()
	return py(s.t, s.env, script, args...)
}

// Create creates a table at path with a delta-rs script (CreateEvents, for
// instance) and returns its URI. delta-rs cannot write gs:// tables to the
// emulator (object_store uploads with the XML API, which fake-gcs-server
// does not serve), so on GCS the table is created in a local directory and
// uploaded as it is; everything after that goes through the sink.
func (s *Store) Create(script, path string) string {
	s.t.Helper()
	if s.Backend != GCS {
		s.Py(script, s.URI(path))
		return s.URI(path)
	}
	dir := filepath.Join(s.t.TempDir(), "table")
	s.Py(script, "file://"+dir)
	UploadGCS(s.t, s.svc, dir, s.Bucket, path)
	return s.URI(path)
}

// ReadRows returns the table's rows sorted by the given column, as delta-rs
// reads them from the store.
func (s *Store) ReadRows(uri, sortBy string) []map[string]any {
	s.t.Helper()
	return readRows(s.t, s.env, uri, sortBy)
}

// WantIDs checks the events table at uri holds exactly the ids of want
// ("0,1,2"), as delta-rs reads them from the store.
func (s *Store) WantIDs(uri string, want string) {
	s.t.Helper()
	wantIDs(s.t, s.env, uri, want)
}

// History returns the table's versions, newest first, with their
// operation, as delta-rs lists them.
func (s *Store) History(uri string) []map[string]any {
	s.t.Helper()
	return history(s.t, s.env, uri)
}

// Facts returns what delta-rs says of the table at uri in the store.
func (s *Store) Facts(uri string) TableFacts {
	s.t.Helper()
	return facts(s.t, s.env, uri)
}

// Root is the store's URI with no path ("s3://bucket", "file:///tmp/…").
func (s *Store) Root() string { return s.root }

func (s *Store) String() string { return fmt.Sprintf("%s store %s", s.Backend, s.root) }
