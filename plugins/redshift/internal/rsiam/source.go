package rsiam

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/redshift"
	"github.com/aws/aws-sdk-go-v2/service/redshiftserverless"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/picomq/heavy-sinks/shared/s3client"
)

// Target says which credentials to ask for. Exactly one of Cluster and
// Workgroup is set.
type Target struct {
	Cluster   string // provisioned cluster identifier
	Workgroup string // Serverless workgroup name
	// DbUser, provisioned only: GetClusterCredentials for this existing
	// user (AutoCreate false). Empty: GetClusterCredentialsWithIAM, which
	// maps the IAM identity to the user "IAM:<name>" (or "IAMR:<role>").
	DbUser string
	// DbName limits the credentials to one database; empty for any.
	DbName string
	// Duration is how long the credentials last, 15 to 60 minutes.
	Duration time.Duration
	// Region of the cluster or workgroup; empty takes the SDK's own
	// (AWS_REGION, the shared config file).
	Region string
}

// Operation is the AWS action the target calls, as an IAM policy names it.
func (t Target) Operation() string {
	switch {
	case t.Workgroup != "":
		return "redshift-serverless:GetCredentials"
	case t.DbUser != "":
		return "redshift:GetClusterCredentials"
	default:
		return "redshift:GetClusterCredentialsWithIAM"
	}
}

// Credentials are a temporary database user and password.
type Credentials struct {
	User       string
	Password   string
	Expiration time.Time
}

// String never shows the password.
func (c Credentials) String() string {
	return fmt.Sprintf("%s until %s", c.User, c.Expiration.UTC().Format(time.RFC3339))
}

// Source makes one AWS call for new credentials.
type Source interface {
	Fetch(ctx context.Context) (Credentials, error)
}

// ErrNoRegion is a Target without a region when the SDK has none either.
var ErrNoRegion = errors.New("no AWS region for the IAM credentials call")

// New loads the default AWS configuration (environment, shared files, web
// identity, IMDS; endpoint overrides such as AWS_ENDPOINT_URL_REDSHIFT and
// AWS_ENDPOINT_URL_REDSHIFT_SERVERLESS included) and returns the Source for
// t. It makes no call.
func New(ctx context.Context, t Target) (Source, error) {
	opts := []func(*awsconfig.LoadOptions) error{
		// The SDK's own logger writes to the process's stderr, past the
		// host's log callback and redaction: silence it.
		awsconfig.WithLogger(logging.Nop{}),
	}
	if t.Region != "" {
		opts = append(opts, awsconfig.WithRegion(t.Region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, ErrNoRegion
	}
	if t.Workgroup != "" {
		return &serverless{t: t, creds: cfg.Credentials, c: redshiftserverless.NewFromConfig(cfg)}, nil
	}
	return &provisioned{t: t, creds: cfg.Credentials, c: redshift.NewFromConfig(cfg)}, nil
}

// identity gets the AWS credentials that sign the call, from the chain's
// cache, before the call: a chain that finds none is then told apart from
// a call the service refused.
func identity(ctx context.Context, t Target, creds aws.CredentialsProvider) error {
	if creds == nil {
		return nil
	}
	if _, err := creds.Retrieve(ctx); err != nil {
		e := wrap(t, err).(*Error)
		// A service in the chain that refused (STS and a web identity
		// token, say) is permanent like any refusal; finding nothing, or
		// no answer from a metadata endpoint, may change by itself.
		e.NoCredentials = !e.Permanent
		return e
	}
	return nil
}

type provisioned struct {
	t     Target
	creds aws.CredentialsProvider
	c     *redshift.Client
}

func (p *provisioned) Fetch(ctx context.Context) (Credentials, error) {
	if err := identity(ctx, p.t, p.creds); err != nil {
		return Credentials{}, err
	}
	secs := aws.Int32(int32(p.t.Duration / time.Second))
	var db *string
	if p.t.DbName != "" {
		db = aws.String(p.t.DbName)
	}
	var (
		user, pw *string
		exp      *time.Time
	)
	if p.t.DbUser != "" {
		out, err := p.c.GetClusterCredentials(ctx, &redshift.GetClusterCredentialsInput{
			ClusterIdentifier: aws.String(p.t.Cluster), DbUser: aws.String(p.t.DbUser),
			DbName: db, DurationSeconds: secs, AutoCreate: aws.Bool(false),
		})
		if err != nil {
			return Credentials{}, wrap(p.t, err)
		}
		user, pw, exp = out.DbUser, out.DbPassword, out.Expiration
	} else {
		out, err := p.c.GetClusterCredentialsWithIAM(ctx, &redshift.GetClusterCredentialsWithIAMInput{
			ClusterIdentifier: aws.String(p.t.Cluster), DbName: db, DurationSeconds: secs,
		})
		if err != nil {
			return Credentials{}, wrap(p.t, err)
		}
		user, pw, exp = out.DbUser, out.DbPassword, out.Expiration
	}
	return complete(p.t, user, pw, exp)
}

type serverless struct {
	t     Target
	creds aws.CredentialsProvider
	c     *redshiftserverless.Client
}

func (s *serverless) Fetch(ctx context.Context) (Credentials, error) {
	if err := identity(ctx, s.t, s.creds); err != nil {
		return Credentials{}, err
	}
	in := &redshiftserverless.GetCredentialsInput{
		WorkgroupName:   aws.String(s.t.Workgroup),
		DurationSeconds: aws.Int32(int32(s.t.Duration / time.Second)),
	}
	if s.t.DbName != "" {
		in.DbName = aws.String(s.t.DbName)
	}
	out, err := s.c.GetCredentials(ctx, in)
	if err != nil {
		return Credentials{}, wrap(s.t, err)
	}
	return complete(s.t, out.DbUser, out.DbPassword, out.Expiration)
}

// complete checks that the answer has all three fields: a missing one would
// otherwise surface as a refused login that blames the database.
func complete(t Target, user, pw *string, exp *time.Time) (Credentials, error) {
	if aws.ToString(user) == "" || aws.ToString(pw) == "" || exp == nil || exp.IsZero() {
		return Credentials{}, &Error{Op: t.Operation(), Err: errors.New("the answer lacks DbUser, DbPassword or Expiration")}
	}
	return Credentials{User: *user, Password: *pw, Expiration: *exp}, nil
}

// Error is a failed credentials call. Permanent says the same call will
// fail again until the configuration or the IAM policy changes.
type Error struct {
	Op        string // e.g. redshift:GetClusterCredentialsWithIAM
	Permanent bool
	// NoCredentials: the default chain found no AWS credentials to sign
	// the call with (see s3client.DefaultChainTried), and the call was not
	// made.
	NoCredentials bool
	Err           error
}

func (e *Error) Error() string {
	if e.NoCredentials {
		return fmt.Sprintf("%s was not called: the AWS default credential chain found no credentials (tried %s): %v", e.Op, s3client.DefaultChainTried, e.Err)
	}
	return e.Op + " failed: " + e.Err.Error()
}

// IsNoCredentials reports whether err is an Error of a chain that found no
// credentials.
func IsNoCredentials(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.NoCredentials
}
func (e *Error) Unwrap() error { return e.Err }

// IsPermanent reports whether err is an Error that will repeat.
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Permanent
}

// wrap classifies an SDK error. The service answered 4xx for a request it
// will refuse again (keys it does not know, no such cluster, invalid
// parameter): permanent. A missing permission, throttling, 5xx and anything
// without an answer (network, the credential chain finding nothing yet, a
// canceled context) are not. An
// answer never carries the password, so the text is safe to show.
func wrap(t Target, err error) error {
	e := &Error{Op: t.Operation(), Err: err}
	var api smithy.APIError
	if errors.As(err, &api) {
		e.Err = errors.New(describe(api))
		status := 0
		var rs interface{ HTTPStatusCode() int }
		if errors.As(err, &rs) {
			status = rs.HTTPStatusCode()
		}
		e.Permanent = status >= 400 && status < 500 && status != http.StatusTooManyRequests && !throttling[api.ErrorCode()] &&
			!denied[api.ErrorCode()]
	}
	return e
}

// denied are the error codes AWS uses for a known identity that lacks a
// permission: a policy granted later (IAM is eventually consistent, too)
// changes the answer without a configuration change, so they are not
// permanent. Keys AWS does not know (InvalidClientTokenId,
// UnrecognizedClientException, SignatureDoesNotMatch) are.
var denied = map[string]bool{
	"AccessDenied": true, "AccessDeniedException": true, "UnauthorizedOperation": true,
}

// throttling are the error codes AWS uses for rate limits, some with 400.
var throttling = map[string]bool{
	"Throttling": true, "ThrottlingException": true, "ThrottledException": true,
	"RequestThrottled": true, "RequestThrottledException": true, "TooManyRequestsException": true,
	"RequestLimitExceeded": true, "SlowDown": true, "ServiceUnavailable": true,
}

func describe(api smithy.APIError) string {
	if msg := api.ErrorMessage(); msg != "" {
		return api.ErrorCode() + ": " + msg
	}
	return api.ErrorCode()
}
