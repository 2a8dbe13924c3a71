package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

// target is where the sink of a run writes, one table per run.
type target interface {
	lib() string // the plugin library's path in the definition
	uri() string // for the report
	create(name string) error
	config(name string) map[string]any // plugin_config, secrets left out
	env(key string) []string           // the secrets, as picomq-connect's environment overrides
	versions(ctx context.Context, name string) (int, error)
	remove(ctx context.Context) error
	delta() bool // the Delta sink: versions and commit races are counted
}

func newTarget(name, work, python, run string) (target, error) {
	if name == "redshift" {
		return newRedshift(run)
	}
	t, err := bench.NewDeltaTarget(name, work, run)
	if err != nil {
		return nil, err
	}
	return deltaTarget{t, python}, nil
}

// deltaTarget is a Delta table on file:// or MinIO.
type deltaTarget struct {
	t      *bench.DeltaTarget
	python string
}

func (d deltaTarget) lib() string                       { return "libpicomq_connector_delta_sink" }
func (d deltaTarget) uri() string                       { return d.t.URI }
func (d deltaTarget) create(name string) error          { return d.t.CreateTable(d.python, name) }
func (d deltaTarget) config(name string) map[string]any { return d.t.PluginConfig(name, false) }
func (d deltaTarget) env(key string) []string           { return d.t.ConnectEnv(key) }
func (d deltaTarget) remove(ctx context.Context) error  { return d.t.Remove(ctx) }
func (d deltaTarget) delta() bool                       { return true }
func (d deltaTarget) versions(ctx context.Context, name string) (int, error) {
	return d.t.Versions(ctx, name)
}

// redshiftTarget is a Redshift table through the emulator (rsemu) running
// in this process, in front of a fresh PostgreSQL database, its COPY
// reading from a fresh MinIO bucket; -copy-latency and -commit-latency
// set its cost model.
type redshiftTarget struct {
	svc    services.Services
	emu    *rsemu.Server
	db     string
	drop   func()
	s3     *s3.Client
	bucket string
}

func newRedshift(run string) (*redshiftTarget, error) {
	ctx := context.Background()
	svc, err := services.Lookup()
	if err != nil {
		return nil, fmt.Errorf("redshift target: %w (run buildscripts/services.sh start)", err)
	}
	r := &redshiftTarget{svc: svc, db: "partitionbench_" + run, bucket: "bench-rs-" + run,
		s3: services.NewS3Client(svc.S3Endpoint, svc.S3AccessKey, svc.S3SecretKey, svc.S3Region)}
	dsn, drop, err := bench.CreateDatabase(ctx, svc.PGDSN, r.db)
	if err != nil {
		return nil, err
	}
	r.drop = drop
	if _, err := r.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &r.bucket}); err != nil {
		drop()
		return nil, err
	}
	r.emu, err = rsemu.New(rsemu.Config{BackendDSN: dsn, S3Endpoint: svc.S3Endpoint, S3AccessKey: svc.S3AccessKey,
		S3SecretKey: svc.S3SecretKey, S3Region: svc.S3Region, CopyLatency: *copyLatency, CommitLatency: *commitLatency})
	if err != nil {
		_ = r.remove(ctx)
		return nil, err
	}
	return r, nil
}

func (r *redshiftTarget) lib() string { return "libpicomq_connector_redshift_sink" }
func (r *redshiftTarget) uri() string {
	return fmt.Sprintf("rsemu, COPY %v, commit %v, database %s", *copyLatency, *commitLatency, r.db)
}

// create does nothing: the sink creates its table and staging table.
func (r *redshiftTarget) create(string) error { return nil }

func (r *redshiftTarget) config(name string) map[string]any {
	return map[string]any{"target_table": name, "aws_iam_role": rsemu.DefaultRole, "s3_bucket": r.bucket, "s3_prefix": name,
		"aws_region": r.svc.S3Region, "s3_endpoint": r.svc.S3Endpoint}
}

func (r *redshiftTarget) env(key string) []string {
	prefix := "PICOMQ_CONNECTORS_SINK_" + strings.ToUpper(key) + "_PLUGIN_CONFIG_"
	return []string{prefix + "CONNECTION_STRING=" + r.emu.DSN(r.db),
		prefix + "AWS_ACCESS_KEY_ID=" + r.svc.S3AccessKey, prefix + "AWS_SECRET_ACCESS_KEY=" + r.svc.S3SecretKey}
}

func (r *redshiftTarget) versions(context.Context, string) (int, error) { return 0, nil }
func (r *redshiftTarget) delta() bool                                   { return false }

func (r *redshiftTarget) remove(ctx context.Context) error {
	if r.emu != nil {
		_ = r.emu.Close()
	}
	err := services.EmptyBucket(ctx, r.s3, r.bucket)
	if err == nil {
		_, err = r.s3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &r.bucket})
	}
	r.drop()
	return err
}
