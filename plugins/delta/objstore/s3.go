package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/shared/s3client"
)

// S3 is a table in an S3 bucket under a key prefix.
type S3 struct {
	client *s3.Client
	bucket string
	prefix string // "" or "path/to/table/"
}

// NewS3 returns the store for tablePath in bucket, with the client
// s3client builds from opts (which must have passed Options.Validate, but
// for the region: an s3:// table without options has none, and uses the
// default AWS chain's).
func NewS3(ctx context.Context, bucket, tablePath string, opts S3Options) (*S3, error) {
	client, err := s3client.New(ctx, opts.client())
	if err != nil {
		return nil, fmt.Errorf("S3 configuration: %w", err)
	}
	prefix := strings.Trim(tablePath, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &S3{client: client, bucket: bucket, prefix: prefix}, nil
}

// URI implements Store.
func (s *S3) URI() string { return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/") }

// List implements deltalog.Store, following continuation tokens.
func (s *S3) List(ctx context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.prefix + prefix)}
	if startAfter != "" {
		in.StartAfter = aws.String(s.prefix + startAfter)
	}
	var out []deltalog.FileInfo
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.wrap("list", prefix, err)
		}
		for _, o := range page.Contents {
			fi := deltalog.FileInfo{Path: strings.TrimPrefix(aws.ToString(o.Key), s.prefix), Size: aws.ToInt64(o.Size)}
			if o.LastModified != nil {
				fi.ModTime = *o.LastModified
			}
			out = append(out, fi)
		}
	}
	return out, nil
}

// Get implements deltalog.Store.
func (s *S3) Get(ctx context.Context, p string) ([]byte, error) {
	return s.get(ctx, p, nil)
}

// GetRange implements deltalog.RangeReader.
func (s *S3) GetRange(ctx context.Context, p string, offset, length int64) ([]byte, error) {
	if length == 0 {
		return []byte{}, nil
	}
	r := fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)
	return s.get(ctx, p, &r)
}

func (s *S3) get(ctx context.Context, p string, rng *string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + p), Range: rng})
	if err != nil {
		return nil, s.wrap("get", p, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, s.wrap("get", p, err)
	}
	return data, nil
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, p string, data []byte) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.bucket, Key: aws.String(s.prefix + p), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	})
	return s.wrap("put", p, err)
}

// PutIfAbsent implements deltalog.Store with a conditional PUT
// (If-None-Match: *). S3 answers 412 when the key exists (the version is
// taken) and 409 when a concurrent conditional write to the same key is in
// flight (try again).
func (s *S3) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.bucket, Key: aws.String(s.prefix + p), Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))), IfNoneMatch: aws.String("*"),
	})
	return s.wrap("put-if-absent", p, err)
}

// Delete implements deltalog.Store.
func (s *S3) Delete(ctx context.Context, p string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + p)})
	if err != nil && errors.Is(s.wrap("delete", p, err), deltalog.ErrNotFound) {
		return nil
	}
	return s.wrap("delete", p, err)
}

// wrap maps S3 failures onto the deltalog sentinels. The message names the
// operation and object, never credentials.
func (s *S3) wrap(op, p string, err error) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("s3 %s s3://%s/%s%s", op, s.bucket, s.prefix, p)
	var re *smithyhttp.ResponseError
	status, detail := 0, err.Error()
	if errors.As(err, &re) {
		status, detail = re.HTTPStatusCode(), describeResponse(re, err)
	}
	var chain *s3client.CredentialsError
	var apiErr smithy.APIError
	code := ""
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	switch {
	case status == http.StatusPreconditionFailed || code == "PreconditionFailed":
		return fmt.Errorf("%s: %w", where, deltalog.ErrAlreadyExists)
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound":
		if code == "NoSuchBucket" {
			return fmt.Errorf("%s: %w", where, &NoBucketError{Kind: "bucket", Name: s.bucket})
		}
		return fmt.Errorf("%s: %w", where, deltalog.ErrNotFound)
	case code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch":
		return fmt.Errorf("%s: %s: %w", where, detail, ErrKeyRefused)
	case status == http.StatusConflict, status == http.StatusTooManyRequests, status >= 500,
		code == "SlowDown", code == "RequestTimeout", code == "ConditionalRequestConflict":
		return fmt.Errorf("%s: %w: %s", where, deltalog.ErrTransient, detail)
	case status == 0 && errors.As(err, &chain):
		// No request was sent: the default chain gave nothing to sign it
		// with. Its text already says what was tried.
		if chain.Refused {
			return fmt.Errorf("%s: %w", where, chain)
		}
		return fmt.Errorf("%s: %w: %w", where, deltalog.ErrTransient, chain)
	case status == 0 && !errors.Is(err, context.Canceled):
		// No HTTP response: a network failure or timeout. Whether the request
		// reached the store is unknown; callers that care read back.
		return fmt.Errorf("%s: %w: %v", where, deltalog.ErrTransient, err)
	}
	return fmt.Errorf("%s: %s", where, detail)
}

// describeResponse renders a failure the store answered: the status, the
// endpoint with its real scheme, the service's code and message and the
// request id. The SDK's own text says "https response error" whatever the
// scheme, which sends the operator of a plain-http MinIO after a TLS
// problem that is not there.
func describeResponse(re *smithyhttp.ResponseError, err error) string {
	msg := fmt.Sprintf("HTTP %d", re.HTTPStatusCode())
	if re.Response != nil && re.Response.Response != nil && re.Response.Request != nil && re.Response.Request.URL != nil {
		u := re.Response.Request.URL
		msg += " from " + u.Scheme + "://" + u.Host
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		msg += ": " + apiErr.ErrorCode()
		if m := apiErr.ErrorMessage(); m != "" {
			msg += ": " + m
		}
	}
	var rid interface{ ServiceRequestID() string }
	if errors.As(err, &rid) && rid.ServiceRequestID() != "" {
		msg += " (request id " + rid.ServiceRequestID() + ")"
	}
	return msg
}
