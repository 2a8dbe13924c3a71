package services_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

func TestDatabaseIsFreshAndDropped(t *testing.T) {
	svc := services.Require(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		db := svc.NewDatabase(t)
		name = db.Name
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, db.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var current string
		if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&current); err != nil || current != db.Name {
			t.Fatalf("current_database %q %v, want %q", current, err, db.Name)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE t (id int)"); err != nil {
			t.Fatal(err)
		}
	})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, svc.PGDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil || n != 0 {
		t.Fatalf("database %s still exists after cleanup (%d, %v)", name, n, err)
	}
}

func TestBucketIsEmptiedAndRemoved(t *testing.T) {
	svc := services.Require(t)
	client := svc.S3Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var bucket string
	t.Run("inner", func(t *testing.T) {
		bucket = svc.NewBucket(t)
		for _, key := range []string{"a/1", "a/2", "b"} {
			if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("x"))}); err != nil {
				t.Fatal(err)
			}
		}
	})
	_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("bucket %s still exists after cleanup: %v", bucket, err)
	}
}

func TestConditionalPutIsHonoured(t *testing.T) {
	// services.sh refuses to start a MinIO without it; the Delta sink's
	// commits depend on it.
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	client := svc.S3Client()
	ctx := context.Background()
	put := func() error {
		_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"),
			Body: bytes.NewReader([]byte("v")), IfNoneMatch: aws.String("*")})
		return err
	}
	if err := put(); err != nil {
		t.Fatal(err)
	}
	err := put()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "PreconditionFailed" {
		t.Fatalf("second conditional put: %v", err)
	}
}

func TestWithDatabase(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:p@h:5/db?sslmode=disable": "postgres://u:p@h:5/other?sslmode=disable",
		"postgresql://u@h/":                     "postgresql://u@h/other",
		"host=h user=u":                         "host=h user=u dbname='other'",
	} {
		got, err := services.WithDatabase(in, "other")
		if err != nil || got != want {
			t.Errorf("WithDatabase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestLookupReadsEnvFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, services.EnvFile), []byte(strings.Join([]string{
		"# written by services.sh",
		"PICOMQ_TEST_PG_DSN=postgres://from-file",
		"PICOMQ_TEST_S3_ENDPOINT='http://file:9000'",
		"export PICOMQ_TEST_S3_ACCESS_KEY=ak",
		"PICOMQ_TEST_S3_SECRET_KEY=sk",
		"PICOMQ_TEST_S3_REGION=us-east-1",
		"PICOMQ_TEST_AZURE_ENDPOINT=http://az:10000/devstoreaccount1",
		"PICOMQ_TEST_GCS_ENDPOINT=http://gcs:4443",
		"PICOMQ_KAFKA_BROKERS=k1:9092, k2:9092",
	}, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	clearEnv(t)
	t.Setenv(services.EnvS3Region, "eu-west-1") // the environment wins over the file
	t.Setenv(services.EnvAzureAccount, "acct")
	s, err := services.Lookup()
	if err != nil {
		t.Fatal(err)
	}
	if s.PGDSN != "postgres://from-file" || s.S3Endpoint != "http://file:9000" || s.S3AccessKey != "ak" || s.S3Region != "eu-west-1" {
		t.Fatalf("%+v", s)
	}
	// Azure and GCS keys are read too, but only their Require* insist.
	if s.AzureEndpoint != "http://az:10000/devstoreaccount1" || s.AzureAccount != "acct" || s.AzureKey != "" || s.GCSEndpoint != "http://gcs:4443" {
		t.Fatalf("%+v", s)
	}
	if !slices.Equal(s.KafkaBrokers, []string{"k1:9092", "k2:9092"}) {
		t.Fatalf("KafkaBrokers %q", s.KafkaBrokers)
	}
	if err := os.Remove(filepath.Join(dir, services.EnvFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := services.Lookup(); err == nil || !strings.Contains(err.Error(), services.EnvPGDSN) {
		t.Fatalf("missing services: %v", err)
	}
}

// fatalRecorder captures Fatalf instead of failing the real test.
type fatalRecorder struct {
	testing.TB
	msg     string
	skipped bool
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fatalRecorder) Skip(...any)          { f.skipped = true; runtime.Goexit() }
func (f *fatalRecorder) Skipf(string, ...any) { f.skipped = true; runtime.Goexit() }
func (f *fatalRecorder) SkipNow()             { f.skipped = true; runtime.Goexit() }

func clearEnv(t *testing.T) {
	for _, k := range []string{services.EnvPGDSN, services.EnvS3Endpoint, services.EnvS3AccessKey, services.EnvS3SecretKey, services.EnvS3Region,
		services.EnvAzureEndpoint, services.EnvAzureAccount, services.EnvAzureKey, services.EnvGCSEndpoint, services.EnvKafkaBrokers,
		services.EnvSchemaRegistryURL} {
		t.Setenv(k, "")
	}
}

func TestRequireFailsWithInstructionsWhenServicesAreMissing(t *testing.T) {
	t.Chdir(t.TempDir()) // no go.mod, no .services.env above
	clearEnv(t)
	for name, require := range map[string]func(testing.TB) services.Services{
		"Require": services.Require, "RequireAzure": services.RequireAzure, "RequireGCS": services.RequireGCS,
		"RequireKafka": services.RequireKafka, "RequireSchemaRegistry": services.RequireSchemaRegistry,
	} {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			require(rec)
		}()
		<-done
		if rec.skipped || !strings.Contains(rec.msg, "buildscripts/services.sh start") || !strings.Contains(rec.msg, "make services") {
			t.Fatalf("%s did not fail with instructions: skipped=%v msg=%q", name, rec.skipped, rec.msg)
		}
	}
	// Azure's keys alone satisfy RequireAzure.
	t.Setenv(services.EnvAzureEndpoint, "http://az")
	t.Setenv(services.EnvAzureAccount, "a")
	t.Setenv(services.EnvAzureKey, "k")
	if s := services.RequireAzure(t); s.AzureEndpoint != "http://az" || s.PGDSN != "" {
		t.Fatalf("%+v", s)
	}
}

func TestAzureContainerIsRemovedAndHonoursConditionalPut(t *testing.T) {
	svc := services.RequireAzure(t)
	ctx := context.Background()
	var name string
	put := func(c *container.Client, key string) error {
		star := azcore.ETagAny
		_, err := c.NewBlockBlobClient(key).Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("v"))), &blockblob.UploadOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &star}}})
		return err
	}
	t.Run("inner", func(t *testing.T) {
		name = svc.NewAzureContainer(t)
		c := svc.AzureContainerClient(t, name)
		if err := put(c, "a/1"); err != nil {
			t.Fatal(err)
		}
		// services.sh refuses an Azurite without it; the Delta sink's commits
		// depend on it.
		if err := put(c, "a/1"); !bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet) {
			t.Fatalf("second conditional put: %v", err)
		}
		// The SAS token the helper makes works for the same operations.
		sc, err := container.NewClientWithNoCredential(svc.AzureEndpoint+"/"+name+"?"+svc.AzureContainerSAS(t, name), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := put(sc, "a/2"); err != nil {
			t.Fatalf("put with the SAS: %v", err)
		}
		// Azurite honours List Blobs startFrom (the Delta sink lists with
		// it). Asked over plain HTTP with the SAS: azblob v1.8.0, the
		// version go.mod keeps, drops ListBlobsFlatOptions.StartFrom (the
		// sink sets the parameter itself, objstore's startFromPolicy).
		resp, err := http.Get(svc.AzureEndpoint + "/" + name + "?restype=container&comp=list&startFrom=a%2F2&" + svc.AzureContainerSAS(t, name))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Count(string(body), "<Name>") != 1 || !strings.Contains(string(body), "<Name>a/2</Name>") {
			t.Fatalf("startFrom: %s %s", resp.Status, body)
		}
	})
	_, err := svc.AzureContainerClient(t, name).GetProperties(ctx, nil)
	if !bloberror.HasCode(err, bloberror.ContainerNotFound) {
		t.Fatalf("container %s still exists after cleanup: %v", name, err)
	}
}

func TestGCSBucketIsRemovedAndHonoursGenerationMatch(t *testing.T) {
	svc := services.RequireGCS(t)
	ctx := context.Background()
	c := svc.GCSClient(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		name = svc.NewGCSBucket(t)
		put := func() error { return c.Upload(ctx, name, "a/1", []byte("v"), true) }
		if err := put(); err != nil {
			t.Fatal(err)
		}
		var ge *services.GCSError
		if err := put(); !errors.As(err, &ge) || ge.Status != 412 {
			t.Fatalf("second conditional upload: %v", err)
		}
		if names, err := c.List(ctx, name, "a/"); err != nil || len(names) != 1 || names[0] != "a/1" {
			t.Fatalf("list: %v %v", names, err)
		}
	})
	if ok, err := c.BucketExists(ctx, name); ok || err != nil {
		t.Fatalf("bucket %s still exists after cleanup: %v", name, err)
	}
}

// The broker services.sh starts is a real Apache Kafka: a topic created,
// produced to and read back, and a group offset committed and fetched.
func TestKafkaBrokerAnswers(t *testing.T) {
	svc := services.RequireKafka(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(svc.KafkaBrokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := "services-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	defer adm.DeleteTopics(context.Background(), topic)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if o, ok := ends.Lookup(topic, 0); err != nil || !ok || o.Offset != 1 {
		t.Fatalf("end offset %+v, %v", o, err)
	}
	group := topic + "-group"
	offs := kadm.Offsets{}
	offs.AddOffset(topic, 0, 1, -1)
	if _, err := adm.CommitOffsets(ctx, group, offs); err != nil {
		t.Fatal(err)
	}
	got, err := adm.FetchOffsets(ctx, group)
	if o, ok := got.Lookup(topic, 0); err != nil || !ok || o.At != 1 {
		t.Fatalf("committed %+v, %v", o, err)
	}
	adm.DeleteGroups(context.Background(), group)
}

// A private MinIO and PostgreSQL keep their data across a restart.
func TestPrivateServicesRestart(t *testing.T) {
	p := services.StartPrivate(t, "postgres", "minio")
	shared, err := services.Lookup()
	if err == nil && (p.PGDSN == shared.PGDSN || p.S3Endpoint == shared.S3Endpoint) {
		t.Fatalf("private services %+v share an address with the shared ones", p.Services)
	}
	bucket := p.NewBucket(t)
	db := p.NewDatabase(t)
	ctx := context.Background()
	if _, err := p.S3Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
		t.Fatal(err)
	}
	p.Restart(t, "minio", "postgres")
	if _, err := p.S3Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")}); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	conn, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	conn.Close(ctx)
}
