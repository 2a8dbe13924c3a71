package s3client

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
)

// Retries says whether the SDK retries a failed call.
type Retries uint8

const (
	// SDKRetries keeps the SDK's standard retryer (a few attempts with
	// jittered backoff for throttling, 5xx and dropped connections).
	SDKRetries Retries = iota
	// NoRetries makes every call once: the caller's own retry (for the
	// Redshift sink, the runtime's redelivery of the batch) takes over.
	NoRetries
)

// Options are the client settings. The zero value is a client for the
// default region and credential chain with the SDK's retries.
type Options struct {
	Region string
	// AccessKey and SecretKey: both or neither; neither uses the default
	// AWS credential chain (environment, profile, web identity, IMDS).
	AccessKey, SecretKey string
	// Endpoint is a custom endpoint (MinIO, other S3-compatible stores);
	// it turns on path-style addressing, which most of them need. Empty
	// means AWS's own endpoints.
	Endpoint string
	// AllowHTTP permits a plain http:// Endpoint.
	AllowHTTP bool
	Retries   Retries
}

// Errors Options.Validate returns for the static keys.
var (
	ErrNoAccessKey = errors.New("a secret key without an access key")
	ErrNoSecretKey = errors.New("an access key without a secret key")
)

// EndpointError is a custom endpoint that is not an http(s) URL, or that is
// plain http while Options.AllowHTTP is off (PlainHTTP).
type EndpointError struct {
	Endpoint  string
	PlainHTTP bool
}

func (e *EndpointError) Error() string {
	if e.PlainHTTP {
		return fmt.Sprintf("S3 endpoint %q is plain http, which is not allowed", e.Endpoint)
	}
	return fmt.Sprintf("S3 endpoint %q is not an http(s) URL", e.Endpoint)
}

// CheckKeys returns ErrNoAccessKey or ErrNoSecretKey when only one of the
// static keys is set.
func CheckKeys(accessKey, secretKey string) error {
	switch {
	case accessKey == "" && secretKey != "":
		return ErrNoAccessKey
	case secretKey == "" && accessKey != "":
		return ErrNoSecretKey
	}
	return nil
}

// CheckEndpoint returns an *EndpointError unless endpoint is empty or an
// http(s) URL with a host (plain http only when allowHTTP).
func CheckEndpoint(endpoint string, allowHTTP bool) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &EndpointError{Endpoint: endpoint}
	}
	if u.Scheme == "http" && !allowHTTP {
		return &EndpointError{Endpoint: endpoint, PlainHTTP: true}
	}
	return nil
}

// Validate checks the keys, then the endpoint, without any I/O.
func (o Options) Validate() error {
	if err := CheckKeys(o.AccessKey, o.SecretKey); err != nil {
		return err
	}
	return CheckEndpoint(o.Endpoint, o.AllowHTTP)
}

// New returns a client for o, which should have passed Validate (New checks
// again: it is cheap, and a bad endpoint must never reach the SDK).
func New(ctx context.Context, o Options) (*s3.Client, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	loadOpts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(o.Region)}
	if o.AccessKey != "" {
		loadOpts = append(loadOpts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.AccessKey, o.SecretKey, "")))
	}
	// The SDK's own logger writes to the process's stderr, past the host's
	// log callback, the level setting and redaction: silence it.
	loadOpts = append(loadOpts, awsconfig.WithLogger(logging.Nop{}))
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, err
	}
	if o.AccessKey == "" {
		// The default chain: its failures must be told from the store's.
		cfg.Credentials = MarkChain(cfg.Credentials)
	}
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		so.DisableLogOutputChecksumValidationSkipped = true
		if o.Retries == NoRetries {
			so.Retryer = aws.NopRetryer{}
		}
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
			so.UsePathStyle = true
		}
	}), nil
}
