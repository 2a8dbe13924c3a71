package objstore

import (
	"fmt"
	"net/url"
	"strings"
)

// Backend is the kind of store a table lives in.
type Backend uint8

const (
	BackendLocal Backend = iota + 1 // file://
	BackendS3                       // s3://, s3a://
	BackendAzure                    // az://, azure://, abfs://, abfss://
	BackendGCS                      // gs://
)

// String is the backend's name in messages ("S3 backend requires ...").
func (b Backend) String() string {
	switch b {
	case BackendLocal:
		return "local"
	case BackendS3:
		return "S3"
	case BackendAzure:
		return "Azure"
	case BackendGCS:
		return "GCS"
	}
	return fmt.Sprintf("Backend(%d)", uint8(b))
}

// Location is a table URI parsed once: which backend, where in it.
type Location struct {
	Backend Backend
	// Bucket is the S3 or GCS bucket or the Azure container; "" for local.
	Bucket string
	// Account is the Azure storage account an abfs[s] URI names; "" otherwise.
	Account string
	// Path is the table directory for local tables (absolute, as in the
	// URI) and the key prefix without surrounding slashes for the others.
	Path string
	// AzureEndpoint is the blob endpoint an abfs[s] URI's dfs host implies
	// (its blob twin, which also covers sovereign clouds); "" otherwise.
	AzureEndpoint string

	raw string
}

// String returns the URI the location was parsed from.
func (l Location) String() string { return l.raw }

// URIError is a table URI that names no table this package can open. Its
// message begins with "Invalid table URI", the spec's wording.
type URIError struct {
	URI string // "" when the problem is in a part of the URI only
	msg message
}

func (e *URIError) Error() string { return e.Render(nil) }

// Render is Error with options named by name (nil: Option.String), so that
// a plugin can name its own config keys.
func (e *URIError) Render(name func(Option) string) string {
	if e.URI == "" {
		return "Invalid table URI: " + e.msg.render(name)
	}
	return fmt.Sprintf("Invalid table URI: %q: %s", e.URI, e.msg.render(name))
}

func uriError(raw, format string, args ...any) *URIError {
	return &URIError{URI: raw, msg: message{format, args}}
}

// ParseLocation parses a resolved table URI. Every error is a *URIError.
func ParseLocation(raw string) (Location, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return Location{}, uriError(raw, "a URL with a scheme is required, e.g. file:///data/delta/orders or s3://bucket/path")
	}
	loc := Location{raw: raw, Path: strings.Trim(u.Path, "/")}
	switch scheme := strings.ToLower(u.Scheme); scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, uriError(raw, "file URIs name a local path (file:///path)")
		}
		// NewLocal refuses an empty path.
		loc.Backend, loc.Path = BackendLocal, u.Path
	case "s3", "s3a":
		if u.Host == "" {
			return Location{}, uriError(raw, "no bucket")
		}
		loc.Backend, loc.Bucket = BackendS3, u.Host
	case "az", "azure", "abfs", "abfss":
		container, account, err := parseAzureURI(u)
		if err != nil {
			return Location{}, uriError(raw, "%v", err)
		}
		loc.Backend, loc.Bucket, loc.Account = BackendAzure, container, account
		if scheme == "abfs" || scheme == "abfss" {
			if acct, rest, ok := strings.Cut(u.Hostname(), ".dfs."); ok && rest != "" {
				loc.AzureEndpoint = "https://" + acct + ".blob." + rest
			}
		}
	case "gs":
		if u.Host == "" || u.User != nil {
			return Location{}, uriError(raw, "gs:// URIs name a bucket, gs://bucket/path")
		}
		loc.Backend, loc.Bucket = BackendGCS, u.Host
	default:
		return Location{}, uriError(raw, "unsupported scheme %q (use file, s3, az, abfss or gs)", u.Scheme)
	}
	return loc, nil
}

// message is a text whose Option arguments are named when it is rendered.
type message struct {
	format string
	args   []any
}

func (m message) render(name func(Option) string) string {
	if name == nil {
		name = Option.String
	}
	args := make([]any, len(m.args))
	for i, a := range m.args {
		if o, ok := a.(Option); ok {
			a = name(o)
		}
		args[i] = a
	}
	return fmt.Sprintf(m.format, args...)
}
