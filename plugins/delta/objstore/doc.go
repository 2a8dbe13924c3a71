// Package objstore gives the Delta sink one object-store interface over the
// backends a table URI can name: file:// (local filesystem), s3:// (AWS S3
// and S3-compatible stores such as MinIO), az:// (Azure Blob Storage,
// Azurite) and gs:// (Google Cloud Storage, fake-gcs-server).
//
// Every backend implements deltalog.Store, so the Delta log code never sees a
// provider error: missing objects come back as deltalog.ErrNotFound, a lost
// put-if-absent race as deltalog.ErrAlreadyExists, throttling and timeouts
// as errors matching deltalog.IsTransient. Each backend keeps its own
// conditional-write quirks (link/RENAME_NOREPLACE locally, If-None-Match: *
// on S3 and Azure, ifGenerationMatch=0 on GCS) to itself.
//
// A table URI is parsed once, by ParseLocation, into a Location; Open takes
// it. URI problems are *URIError values and option problems (from
// Options.Validate, run once when the sink opens) *OptionError values,
// which say which Option is wrong: the plugin renders them with its own
// config key names, which this package does not know.
//
// Files: store.go (the interface and Open), location.go (ParseLocation,
// URIError), options.go (Options, Validate, OptionError), local.go, s3.go
// (its client comes from shared/s3client), azure.go, gcs.go (the JSON API
// over net/http, no client library) with gcs_http.go (its requests,
// retries, errors, tokens and name escaping).
package objstore
