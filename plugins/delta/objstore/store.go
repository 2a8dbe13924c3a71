package objstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/shared/s3client"
)

// NoBucketError is a bucket (S3, GCS) or container (Azure) that does not
// exist: the store answered no to the location itself. It is a
// deltalog.ErrNotFound.
type NoBucketError struct {
	Kind string // "bucket" or "container"
	Name string
}

func (e *NoBucketError) Error() string { return fmt.Sprintf("%s %q does not exist", e.Kind, e.Name) }

// Is makes the error a deltalog.ErrNotFound.
func (e *NoBucketError) Is(target error) bool { return target == deltalog.ErrNotFound }

// ErrKeyRefused marks a store's answer that the configured key is wrong
// (an authentication failure: an unknown key id, a signature that does not
// match), as opposed to a key that lacks a permission, which a grant can
// change without a configuration change.
var ErrKeyRefused = errors.New("the store refused the configured key")

// NoCredentials reports whether err is a default credential chain that
// found no credentials yet (S3; Azure and GCS say so at Authenticate, with
// a *CredentialError): the environment may still provide them.
func NoCredentials(err error) bool {
	var ce *s3client.CredentialsError
	return errors.As(err, &ce) && !ce.Refused
}

// Store is a table's object store: the Delta log's narrow interface plus an
// unconditional Put for data files (their names are unique, so the race a
// commit guards against cannot happen there).
type Store interface {
	deltalog.Store
	deltalog.RangeReader
	// Put writes data to path, replacing nothing a reader could depend on.
	// The object is durable when Put returns, or, on a file:// store with
	// LocalOptions.SyncFilesystem, when the next PutIfAbsent returns.
	Put(ctx context.Context, path string, data []byte) error
	// URI is the table location, for messages; it never contains credentials.
	URI() string
}

// Open returns the store for a location. opts must have passed
// Options.Validate; Open checks only that they fit the location, and a
// mismatch is a *URIError.
func Open(ctx context.Context, loc Location, opts Options) (Store, error) {
	switch loc.Backend {
	case BackendLocal:
		l, err := NewLocal(loc.Path)
		if err == nil {
			l.syncFS = opts.Local.SyncFilesystem
		}
		return l, err
	case BackendS3:
		return NewS3(ctx, loc.Bucket, loc.Path, opts.S3)
	case BackendAzure:
		if err := checkAzureTarget(loc, opts.Azure); err != nil {
			return nil, err
		}
		az := opts.Azure
		if az.Endpoint == "" {
			az.Endpoint = loc.AzureEndpoint
		}
		return NewAzure(ctx, loc.Bucket, loc.Path, az)
	case BackendGCS:
		if opts.GCS.ServiceAccountKey == "" && !opts.GCS.DefaultCredentials {
			return nil, uriError(loc.raw, `gs:// tables need %s = "gcs" and its keys`, OptBackend)
		}
		return NewGCS(ctx, loc.Bucket, loc.Path, opts.GCS)
	}
	// Only a zero Location gets here: ParseLocation sets a backend.
	return nil, uriError(loc.raw, "not parsed by ParseLocation")
}
