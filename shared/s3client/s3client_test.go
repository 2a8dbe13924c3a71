package s3client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/picomq/heavy-sinks/shared/s3client"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    s3client.Options
		want error
	}{
		{"default chain", s3client.Options{}, nil},
		{"both keys", s3client.Options{AccessKey: "a", SecretKey: "s"}, nil},
		{"no access key", s3client.Options{SecretKey: "s"}, s3client.ErrNoAccessKey},
		{"no secret key", s3client.Options{AccessKey: "a"}, s3client.ErrNoSecretKey},
		{"https endpoint", s3client.Options{Endpoint: "https://s3.example.com"}, nil},
		{"allowed http", s3client.Options{Endpoint: "http://127.0.0.1:9000", AllowHTTP: true}, nil},
		{"refused http", s3client.Options{Endpoint: "http://127.0.0.1:9000"}, &s3client.EndpointError{Endpoint: "http://127.0.0.1:9000", PlainHTTP: true}},
		{"no scheme", s3client.Options{Endpoint: "minio:9000", AllowHTTP: true}, &s3client.EndpointError{Endpoint: "minio:9000"}},
		{"no host", s3client.Options{Endpoint: "http://", AllowHTTP: true}, &s3client.EndpointError{Endpoint: "http://"}},
		{"ftp", s3client.Options{Endpoint: "ftp://x", AllowHTTP: true}, &s3client.EndpointError{Endpoint: "ftp://x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			var got, want *s3client.EndpointError
			switch {
			case errors.As(tc.want, &want):
				if !errors.As(err, &got) || *got != *want {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
			case !errors.Is(err, tc.want) || (tc.want == nil && err != nil):
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNewRetryPolicyAndPathStyle(t *testing.T) {
	ctx := context.Background()
	c, err := s3client.New(ctx, s3client.Options{Region: "r", AccessKey: "a", SecretKey: "s", Endpoint: "http://127.0.0.1:1", AllowHTTP: true, Retries: s3client.NoRetries})
	if err != nil {
		t.Fatal(err)
	}
	o := c.Options()
	if _, nop := o.Retryer.(aws.NopRetryer); !nop || !o.UsePathStyle || aws.ToString(o.BaseEndpoint) != "http://127.0.0.1:1" {
		t.Errorf("retryer %T, path style %v, endpoint %v", o.Retryer, o.UsePathStyle, aws.ToString(o.BaseEndpoint))
	}
	c, err = s3client.New(ctx, s3client.Options{Region: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if o := c.Options(); o.UsePathStyle || o.Retryer.MaxAttempts() < 2 {
		t.Errorf("path style %v, max attempts %d", o.UsePathStyle, o.Retryer.MaxAttempts())
	}
	if _, err := s3client.New(ctx, s3client.Options{Endpoint: "x"}); err == nil {
		t.Error("bad endpoint accepted")
	}
}
