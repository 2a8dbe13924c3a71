package objstore

import (
	"errors"
	"fmt"

	"github.com/picomq/heavy-sinks/shared/s3client"
)

// S3Options are the s3 backend settings.
type S3Options struct {
	AccessKey, SecretKey string // both or neither; neither means the default AWS credential chain
	Region               string // required by Validate
	Endpoint             string // custom endpoint (MinIO); turns on path-style addressing
	AllowHTTP            bool   // permit an http:// endpoint
}

// AzureOptions are the azure backend settings.
type AzureOptions struct {
	Account   string // storage account name
	Container string // the URI's container must be this one
	// Exactly one of AccountKey (shared key), SASToken and
	// DefaultCredential.
	AccountKey string
	SASToken   string
	// DefaultCredential authenticates with the production part of the
	// Azure SDK's DefaultAzureCredential chain (a service principal secret
	// in the environment, workload identity, managed identity) instead of
	// a key. Bearer tokens go over https only.
	DefaultCredential bool
	// Endpoint is the blob service URL; empty means
	// https://<Account>.blob.core.windows.net. Azurite's is path-style,
	// http://127.0.0.1:10000/devstoreaccount1.
	Endpoint string

	cred *azureCredential // set by Options.Authenticate, shared by every table's store
}

// GCSOptions are the gcs backend settings.
type GCSOptions struct {
	ServiceAccountKey string // the service account JSON key
	// DefaultCredentials uses Google's Application Default Credentials
	// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's file, the metadata server)
	// instead of a key. Exactly one of the two.
	DefaultCredentials bool
	// Endpoint replaces https://storage.googleapis.com (fake-gcs-server,
	// private endpoints). A plain http:// endpoint is an emulator: requests go
	// out without credentials, never in clear text.
	Endpoint string

	auth *gcsAuth // set by Options.Authenticate, shared by every table's store
}

// LocalOptions are the file:// settings.
type LocalOptions struct {
	// SyncFilesystem makes each commit's one syncfs(2) make the batch's data
	// files and the directories that gained them durable, instead of an
	// fsync of each (Local.Put). It also writes out every other program's
	// unsynced data on that filesystem. Validate refuses it on a kernel
	// older than 5.8, whose syncfs does not report write errors.
	SyncFilesystem bool
}

// Options carries the settings of every backend; Open uses the one the
// location's backend selects.
type Options struct {
	// Backend is the group the caller configured, the one Validate checks;
	// zero when none is (file:// tables need none, and an s3:// table
	// without options uses the default AWS credential chain and region).
	Backend Backend
	S3      S3Options
	Azure   AzureOptions
	GCS     GCSOptions
	Local   LocalOptions // for file:// locations, whatever Backend is
}

// Option names one backend setting, so that errors can say which one is
// wrong without this package knowing what a plugin calls it.
type Option uint8

const (
	OptBackend Option = iota + 1 // the choice of backend (Options.Backend)
	OptS3AccessKey
	OptS3SecretKey
	OptS3Region
	OptS3Endpoint
	OptS3AllowHTTP
	OptAzureAccount
	OptAzureContainer
	OptAzureAccountKey
	OptAzureSASToken
	OptAzureEndpoint
	OptGCSServiceAccountKey
	OptGCSEndpoint
	OptAzureDefaultCredential
	OptGCSDefaultCredentials
	OptLocalSyncFilesystem
)

var optionNames = map[Option]string{
	OptBackend: "backend", OptS3AccessKey: "S3 access key", OptS3SecretKey: "S3 secret key", OptS3Region: "S3 region",
	OptS3Endpoint: "S3 endpoint", OptS3AllowHTTP: "S3 allow-http", OptAzureAccount: "Azure account",
	OptAzureContainer: "Azure container", OptAzureAccountKey: "Azure account key", OptAzureSASToken: "Azure SAS token",
	OptAzureEndpoint: "Azure endpoint", OptGCSServiceAccountKey: "GCS service account key", OptGCSEndpoint: "GCS endpoint",
	OptAzureDefaultCredential: "Azure default credential", OptGCSDefaultCredentials: "GCS default credentials",
	OptLocalSyncFilesystem: "filesystem sync",
}

// String is a generic name; plugins render their config key names instead.
func (o Option) String() string {
	if s, ok := optionNames[o]; ok {
		return s
	}
	return fmt.Sprintf("Option(%d)", uint8(o))
}

// Problem is what is wrong with an option.
type Problem uint8

const (
	Missing    Problem = iota + 1 // required and not set
	ExactlyOne                    // exactly one of Option and Other must be set
	Invalid                       // set to a value that cannot be used; the message says why
)

// OptionError is a backend option Validate refuses. Messages never quote
// secrets.
type OptionError struct {
	Backend Backend
	Option  Option
	Other   Option // ExactlyOne: the alternative to Option
	Problem Problem
	msg     message // Invalid: why
}

func (e *OptionError) Error() string { return e.Render(nil) }

// Render is Error with options named by name (nil: Option.String).
func (e *OptionError) Render(name func(Option) string) string {
	if name == nil {
		name = Option.String
	}
	switch e.Problem {
	case Missing:
		return fmt.Sprintf("%s backend requires '%s'", e.Backend, name(e.Option))
	case ExactlyOne:
		return fmt.Sprintf("%s backend requires exactly one of '%s' or '%s'", e.Backend, name(e.Option), name(e.Other))
	}
	return e.msg.render(name)
}

func missing(b Backend, o Option) *OptionError {
	return &OptionError{Backend: b, Option: o, Problem: Missing}
}

// notWith refuses a key set next to the opt-in that replaces it: a
// configuration nobody can read unambiguously, so neither silently wins.
func notWith(b Backend, optIn, key Option) *OptionError {
	return invalid(b, optIn, "'%s' = true takes no '%s': configure one way to authenticate", optIn, key)
}

func invalid(b Backend, o Option, format string, args ...any) *OptionError {
	return &OptionError{Backend: b, Option: o, Problem: Invalid, msg: message{format, args}}
}

// Validate checks the settings of o.Backend without any I/O. Its errors
// are *OptionError values (joined when Azure's key and endpoint are both
// wrong); callers render them with their own option names.
func (o Options) Validate() error {
	if o.Local.SyncFilesystem {
		if err := checkSyncfs(); err != nil {
			return err
		}
	}
	switch o.Backend {
	case 0, BackendLocal:
		return nil
	case BackendS3:
		return o.S3.validate()
	case BackendAzure:
		return o.Azure.validate()
	case BackendGCS:
		return o.GCS.validate()
	}
	return fmt.Errorf("objstore: unknown backend %v", o.Backend)
}

func (s S3Options) validate() error {
	// Both keys or neither: without keys the standard AWS credential chain
	// (environment, profile, IMDS, web identity) applies.
	switch err := s3client.CheckKeys(s.AccessKey, s.SecretKey); {
	case errors.Is(err, s3client.ErrNoAccessKey):
		return missing(BackendS3, OptS3AccessKey)
	case errors.Is(err, s3client.ErrNoSecretKey):
		return missing(BackendS3, OptS3SecretKey)
	}
	if s.Region == "" {
		return missing(BackendS3, OptS3Region)
	}
	var ep *s3client.EndpointError
	if errors.As(s3client.CheckEndpoint(s.Endpoint, s.AllowHTTP), &ep) {
		if ep.PlainHTTP {
			return invalid(BackendS3, OptS3Endpoint, "%s %q is plain http: set %s = true to allow it", OptS3Endpoint, ep.Endpoint, OptS3AllowHTTP)
		}
		return invalid(BackendS3, OptS3Endpoint, "%s %q is not an http(s) URL", OptS3Endpoint, ep.Endpoint)
	}
	return nil
}

func (s S3Options) client() s3client.Options {
	return s3client.Options{Region: s.Region, AccessKey: s.AccessKey, SecretKey: s.SecretKey, Endpoint: s.Endpoint, AllowHTTP: s.AllowHTTP}
}
