package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/internal/testenv/workload"
)

// DeltaTarget is where a bench's Delta tables go: a directory (file) or a
// fresh MinIO bucket (s3), each table a name below URI.
type DeltaTarget struct {
	Name    string            // file or s3
	URI     string            // the parent of the tables
	Storage map[string]string // delta-rs storage options, to create tables
	Config  map[string]any    // plugin_config besides table_uri
	Secrets []string          // FIELD=value, plugin_config set from the environment

	s3     *s3.Client
	bucket string
}

// NewDeltaTarget is a file target under work/tables, or an s3 target in a
// new bucket named after run on the MinIO of .services.env.
func NewDeltaTarget(name, work, run string) (*DeltaTarget, error) {
	switch name {
	case "file":
		return &DeltaTarget{Name: name, URI: "file://" + filepath.Join(work, "tables"), Storage: map[string]string{}, Config: map[string]any{}}, nil
	case "s3":
		svc, err := services.Lookup()
		if err != nil {
			return nil, fmt.Errorf("s3 target: %w (run buildscripts/services.sh start)", err)
		}
		bucket := "bench-" + run
		client := services.NewS3Client(svc.S3Endpoint, svc.S3AccessKey, svc.S3SecretKey, svc.S3Region)
		if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
			return nil, err
		}
		return &DeltaTarget{Name: name, URI: "s3://" + bucket, s3: client, bucket: bucket,
			Storage: map[string]string{"AWS_ENDPOINT_URL": svc.S3Endpoint, "AWS_ACCESS_KEY_ID": svc.S3AccessKey, "AWS_SECRET_ACCESS_KEY": svc.S3SecretKey,
				"AWS_REGION": svc.S3Region, "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"},
			Config:  map[string]any{"storage_backend_type": "s3", "aws_s3_region": svc.S3Region, "aws_s3_endpoint_url": svc.S3Endpoint, "aws_s3_allow_http": true},
			Secrets: []string{"AWS_S3_ACCESS_KEY=" + svc.S3AccessKey, "AWS_S3_SECRET_KEY=" + svc.S3SecretKey}}, nil
	}
	return nil, fmt.Errorf("unknown target %q: want file or s3", name)
}

// CreateTable creates table name (make bench-delta's schema) with delta-rs.
func (t *DeltaTarget) CreateTable(python, name string) error {
	opts, _ := json.Marshal(t.Storage)
	if out, err := exec.Command(python, "-c", workload.CreateDeltaTable, t.URI+"/"+name, string(opts)).CombinedOutput(); err != nil {
		return fmt.Errorf("create table %s: %v\n%s", name, err, out)
	}
	return nil
}

// PluginConfig is the plugin_config of a sink writing table name: Config
// and table_uri; with secrets, the Secrets too (for a host started by the
// bench; picomq-connect takes them from ConnectEnv).
func (t *DeltaTarget) PluginConfig(name string, secrets bool) map[string]any {
	cfg := map[string]any{"table_uri": t.URI + "/" + name}
	for k, v := range t.Config {
		cfg[k] = v
	}
	if secrets {
		for _, kv := range t.Secrets {
			k, v, _ := strings.Cut(kv, "=")
			cfg[strings.ToLower(k)] = v
		}
	}
	return cfg
}

// ConnectEnv is the environment that sets the Secrets of sink key's
// plugin_config in picomq-connect.
func (t *DeltaTarget) ConnectEnv(key string) []string {
	var env []string
	for _, kv := range t.Secrets {
		env = append(env, "PICOMQ_CONNECTORS_SINK_"+strings.ToUpper(key)+"_PLUGIN_CONFIG_"+kv)
	}
	return env
}

// Versions counts the commit files (_delta_log/*.json) of table name: its
// versions, version 0 (the creation) included.
func (t *DeltaTarget) Versions(ctx context.Context, name string) (int, error) {
	n := 0
	if t.s3 == nil {
		ents, err := os.ReadDir(filepath.Join(strings.TrimPrefix(t.URI, "file://"), name, "_delta_log"))
		if err != nil {
			return 0, err
		}
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") {
				n++
			}
		}
		return n, nil
	}
	p := s3.NewListObjectsV2Paginator(t.s3, &s3.ListObjectsV2Input{Bucket: &t.bucket, Prefix: new(name + "/_delta_log/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		for _, o := range page.Contents {
			if strings.HasSuffix(*o.Key, ".json") {
				n++
			}
		}
	}
	return n, nil
}

// Remove deletes what the target holds: the bucket of an s3 target (a
// file target's directory goes with the bench's work directory).
func (t *DeltaTarget) Remove(ctx context.Context) error {
	if t.s3 == nil {
		return nil
	}
	if err := services.EmptyBucket(ctx, t.s3, t.bucket); err != nil {
		return err
	}
	_, err := t.s3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &t.bucket})
	return err
}
