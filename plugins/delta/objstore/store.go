package objstore

import (
	"context"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

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
