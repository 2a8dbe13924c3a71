package services

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3Client returns a client for the test S3 endpoint: static credentials,
// path-style addressing (MinIO has no virtual-host buckets on 127.0.0.1), and
// no shared config files or AWS_* environment consulted, so a developer's AWS
// profile cannot leak into tests.
func (s Services) S3Client() *s3.Client {
	return NewS3Client(s.S3Endpoint, s.S3AccessKey, s.S3SecretKey, s.S3Region)
}

// NewS3Client builds a path-style S3 client for endpoint with static keys.
func NewS3Client(endpoint, accessKey, secretKey, region string) *s3.Client {
	cfg := aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
}

// NewBucket creates an empty bucket for this test. t.Cleanup deletes every
// object in it and then the bucket.
func (s Services) NewBucket(t testing.TB) string {
	t.Helper()
	name := "picomq-t-" + randomHex(6)
	client := s.S3Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("services: create bucket %s at %s: %v\nIs MinIO running? buildscripts/services.sh start", name, s.S3Endpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := EmptyBucket(ctx, client, name); err != nil {
			t.Errorf("services: empty bucket %s: %v", name, err)
			return
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Errorf("services: delete bucket %s: %v", name, err)
		}
	})
	return name
}

// Keys lists the keys under prefix in bucket, sorted.
func Keys(ctx context.Context, client *s3.Client, bucket, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// EmptyBucket deletes every object in bucket. A bucket that no longer exists
// counts as empty.
func EmptyBucket(ctx context.Context, client *s3.Client, bucket string) error {
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			var nsb *types.NoSuchBucket
			if errors.As(err, &nsb) {
				return nil
			}
			return err
		}
		for _, obj := range page.Contents {
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: obj.Key}); err != nil {
				return err
			}
		}
	}
	return nil
}
