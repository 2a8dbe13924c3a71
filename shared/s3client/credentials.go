package s3client

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"
)

// DefaultChainTried is what the AWS SDK's default credential chain looks
// at, in order, for messages.
const DefaultChainTried = "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), the shared files (AWS_PROFILE, AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE), " +
	"web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), the container endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI), " +
	"then EC2 instance metadata (IMDS)"

// CredentialsError is the default credential chain giving no credentials
// to sign a request with. The SDK reports it only as text inside the
// request's error; this type, kept through the SDK's wrapping, lets a
// caller tell it from an answer of the service.
type CredentialsError struct {
	// Refused: a service of the chain answered no (STS refusing a web
	// identity token, say), which will repeat. Otherwise the chain found
	// nothing, or an endpoint of it (instance metadata, the container
	// endpoint) did not answer: a starting pod's identity may not be there
	// yet, and it may come without a configuration change.
	Refused bool
	Err     error
}

func (e *CredentialsError) Error() string {
	if e.Refused {
		return "the AWS default credential chain was refused credentials: " + e.Err.Error()
	}
	return "the AWS default credential chain found no credentials (tried " + DefaultChainTried + "): " + e.Err.Error()
}

func (e *CredentialsError) Unwrap() error { return e.Err }

// MarkChain returns p with its failures as *CredentialsError.
func MarkChain(p aws.CredentialsProvider) aws.CredentialsProvider {
	if p == nil {
		return nil
	}
	return &markedChain{p}
}

type markedChain struct{ next aws.CredentialsProvider }

func (m *markedChain) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := m.next.Retrieve(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		return c, &CredentialsError{Refused: refused(err), Err: err}
	}
	return c, err
}

// refused reports whether a service answered the chain with a 4xx other
// than throttling.
func refused(err error) bool {
	var api smithy.APIError
	var rs interface{ HTTPStatusCode() int }
	if !errors.As(err, &api) || !errors.As(err, &rs) {
		return false
	}
	s := rs.HTTPStatusCode()
	return s >= 400 && s < 500 && s != http.StatusTooManyRequests && s != http.StatusRequestTimeout &&
		api.ErrorFault() != smithy.FaultServer && !throttling[api.ErrorCode()]
}

// throttling are the error codes AWS uses for rate limits, some with 400.
var throttling = map[string]bool{
	"Throttling": true, "ThrottlingException": true, "ThrottledException": true,
	"RequestThrottled": true, "RequestThrottledException": true, "TooManyRequestsException": true,
	"RequestLimitExceeded": true, "SlowDown": true, "ServiceUnavailable": true, "IDPCommunicationError": true,
}
