package redshift

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/picomq/heavy-sinks/shared/s3client"
)

// archiveDir is where archive = true keeps files, under s3_prefix.
const archiveDir = "archive/messages"

// store is the runtime's side of S3: it puts the Parquet files Redshift
// COPYs, then deletes or archives them. No call is retried here, as the
// spec requires: a failed upload fails the batch and the runtime redelivers.
type store struct {
	client *s3.Client
	bucket string
	prefix string // "" or "a/b"
}

// newStore builds the client (shared/s3client, from the validated c):
// static keys when both are set, the default AWS credential chain
// otherwise, path-style addressing with a custom endpoint, and no retries.
func newStore(ctx context.Context, c *Config, prefix string) (*store, error) {
	client, err := s3client.New(ctx, c.s3Options())
	if err != nil {
		return nil, fmt.Errorf("S3 client configuration: %w", err)
	}
	return &store{client: client, bucket: c.S3Bucket, prefix: prefix}, nil
}

// key is the object key of a file name: <prefix>/<name>.
func (st *store) key(name string) string {
	if st.prefix == "" {
		return name
	}
	return st.prefix + "/" + name
}

// archiveKey is where archive = true keeps the file with key.
func (st *store) archiveKey(key string) string {
	return st.key(archiveDir + "/" + path.Base(key))
}

// Content types of what the sink uploads.
const (
	parquetType  = "application/vnd.apache.parquet"
	manifestType = "application/json" // a COPY manifest
)

// put uploads data and insists on HTTP 200.
func (st *store) put(ctx context.Context, key string, data []byte, contentType string) error {
	out, err := st.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(st.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentType:   aws.String(contentType),
	})
	if err != nil {
		return uploadError(st.bucket, key, err)
	}
	if raw, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok && raw.StatusCode != 200 {
		return fmt.Errorf("S3 upload failed with status %d (s3://%s/%s)", raw.StatusCode, st.bucket, key)
	}
	return nil
}

func uploadError(bucket, key string, err error) error {
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() != 0 {
		return fmt.Errorf("S3 upload failed with status %d (s3://%s/%s): %s", status.HTTPStatusCode(), bucket, key, describeS3(err))
	}
	return fmt.Errorf("S3 upload failed (s3://%s/%s): %w", bucket, key, err)
}

// describeS3 prefers the service's error code and message to the SDK's long
// operation error text.
func describeS3(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		if msg := api.ErrorMessage(); msg != "" {
			return api.ErrorCode() + ": " + msg
		}
		return api.ErrorCode()
	}
	return err.Error()
}

// delete removes the object with key.
func (st *store) delete(ctx context.Context, key string) error {
	_, err := st.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(st.bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("S3 delete of s3://%s/%s failed: %s", st.bucket, key, describeS3(err))
	}
	return nil
}

// archive copies the object server-side to its archive key, then deletes
// the original. It returns the archive key.
func (st *store) archive(ctx context.Context, key string) (string, error) {
	dst := st.archiveKey(key)
	src := (&url.URL{Path: st.bucket + "/" + key}).EscapedPath()
	_, err := st.client.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket:     aws.String(st.bucket),
		Key:        aws.String(dst),
		CopySource: aws.String(src),
	})
	if err != nil {
		return dst, fmt.Errorf("S3 copy of s3://%s/%s to %s failed: %s", st.bucket, key, dst, describeS3(err))
	}
	return dst, st.delete(ctx, key)
}
