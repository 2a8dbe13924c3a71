package objstore

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Store is a table's object store: the Delta log's narrow interface plus an
// unconditional Put for data files (their names are unique, so the race a
// commit guards against cannot happen there).
type Store interface {
	deltalog.Store
	deltalog.RangeReader
	// Put writes data to path, replacing nothing a reader could depend on.
	Put(ctx context.Context, path string, data []byte) error
	// URI is the table location, for messages; it never contains credentials.
	URI() string
}

// S3Options are the s3 backend settings.
type S3Options struct {
	AccessKey, SecretKey string // both or neither; neither means the default AWS credential chain
	Region               string
	Endpoint             string // custom endpoint (MinIO); turns on path-style addressing
	AllowHTTP            bool   // permit an http:// endpoint
}

// AzureOptions are the azure backend settings.
type AzureOptions struct {
	Account   string // storage account name
	Container string // azure_container_name: the URI's container must be this one
	// Exactly one of AccountKey (shared key) and SASToken.
	AccountKey string
	SASToken   string
	// Endpoint is the blob service URL; empty means
	// https://<Account>.blob.core.windows.net. Azurite's is path-style,
	// http://127.0.0.1:10000/devstoreaccount1.
	Endpoint string
}

// GCSOptions are the gcs backend settings.
type GCSOptions struct {
	ServiceAccountKey string // the service account JSON key
	// Endpoint replaces https://storage.googleapis.com (fake-gcs-server,
	// private endpoints). A plain http:// endpoint is an emulator: requests go
	// out without credentials, never in clear text.
	Endpoint string
}

// Options carries the settings of every backend; Open uses the one the URI
// scheme selects.
type Options struct {
	S3    S3Options
	Azure AzureOptions
	GCS   GCSOptions
}

// ParseTableURI checks that a resolved table_uri is a URL with a scheme and
// returns it. The spec's message for anything else is "Invalid table URI".
func ParseTableURI(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return nil, fmt.Errorf("Invalid table URI %q: a URL with a scheme is required, e.g. file:///data/delta/orders or s3://bucket/path", raw)
	}
	return u, nil
}

// Open returns the store for a table URI.
func Open(ctx context.Context, rawURI string, opts Options) (Store, error) {
	u, err := ParseTableURI(rawURI)
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("Invalid table URI %q: file URIs name a local path (file:///path)", rawURI)
		}
		return NewLocal(u.Path)
	case "s3", "s3a":
		if u.Host == "" {
			return nil, fmt.Errorf("Invalid table URI %q: no bucket", rawURI)
		}
		return NewS3(ctx, u.Host, strings.Trim(u.Path, "/"), opts.S3)
	case "az", "azure", "abfs", "abfss":
		container, account, err := parseAzureURI(u)
		if err != nil {
			return nil, fmt.Errorf("Invalid table URI %q: %v", rawURI, err)
		}
		if err := checkAzureTarget(container, account, opts.Azure); err != nil {
			return nil, fmt.Errorf("Invalid table URI %q: %v", rawURI, err)
		}
		s, err := NewAzure(ctx, container, strings.Trim(u.Path, "/"), azureEndpointFor(u, opts.Azure))
		if err != nil {
			return nil, err
		}
		return s, nil
	case "gs":
		if u.Host == "" || u.User != nil {
			return nil, fmt.Errorf("Invalid table URI %q: gs:// URIs name a bucket, gs://bucket/path", rawURI)
		}
		if opts.GCS.ServiceAccountKey == "" {
			return nil, fmt.Errorf("Invalid table URI %q: gs:// tables need storage_backend_type = \"gcs\" and its keys", rawURI)
		}
		s, err := NewGCS(ctx, u.Host, strings.Trim(u.Path, "/"), opts.GCS)
		if err != nil {
			return nil, err
		}
		return s, nil
	default:
		return nil, fmt.Errorf("Invalid table URI %q: unsupported scheme %q (use file, s3, az, abfss or gs)", rawURI, u.Scheme)
	}
}
