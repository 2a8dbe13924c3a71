package redshift_test

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

var uuidFile = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.parquet$`)

func TestArchive(t *testing.T) {
	for _, prefix := range []string{"redshift/orders", ""} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			r := newRig(t)
			h, _ := r.open("archive", r.config(map[string]any{"target_table": "arch", "archive": true, "batch_size": 10, "s3_prefix": prefix}))
			mustConsume(t, h, batch("orders", 0, 25))
			dir := "archive/messages/"
			if prefix != "" {
				dir = prefix + "/" + dir
			}
			objs := r.objects("")
			if len(objs) != 3 {
				t.Fatalf("objects %v, want the three archived files only", objs)
			}
			rows := 0
			for _, key := range objs {
				name, ok := strings.CutPrefix(key, dir)
				if !ok || !uuidFile.MatchString(name) {
					t.Errorf("object %q is not %s<uuid v7>.parquet", key, dir)
					continue
				}
				out, err := r.s3.GetObject(r.ctx, &s3.GetObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(key)})
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(out.Body)
				out.Body.Close()
				f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				rows += int(f.NumRows())
			}
			if rows != 25 {
				t.Errorf("archived files hold %d rows", rows)
			}
			if r.count("arch") != 25 {
				t.Error("rows missing")
			}
			if m := metrics(t, h); m["files_archived"] != 3 || m["files_deleted"] != 0 {
				t.Errorf("metrics %v", m)
			}
		})
	}
}

func TestNoArchiveLeavesNoFiles(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("no_archive", r.config(map[string]any{"target_table": "noarch", "batch_size": 10}))
	mustConsume(t, h, batch("orders", 0, 25))
	if objs := r.objects(""); len(objs) != 0 {
		t.Fatalf("objects %v", objs)
	}
}

func TestUploadFailures(t *testing.T) {
	tests := []struct {
		name   string
		config func(r *rig) map[string]any
		want   string
	}{
		{"wrong secret key", func(r *rig) map[string]any {
			return map[string]any{"aws_secret_access_key": "definitely-wrong-secret"}
		}, "S3 upload failed with status 403 (s3://"},
		{"missing bucket", func(r *rig) map[string]any {
			return map[string]any{"s3_bucket": "picomq-no-such-bucket-7f3a9c"}
		}, "S3 upload failed with status 404 (s3://picomq-no-such-bucket-"},
		{"unreachable endpoint", func(r *rig) map[string]any {
			return map[string]any{"s3_endpoint": "http://" + closedPort(r.t)}
		}, "S3 upload failed (s3://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			cfg := r.config(map[string]any{"target_table": "up"})
			for k, v := range tt.config(r) {
				cfg[k] = v
			}
			h, logs := r.open("upload", cfg)
			r.emu.ResetStatements()
			err := sdk.Consume(h, batch("orders", 0, 5))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("got  %v\nwant %s", err, tt.want)
			}
			if sdk.StatusOf(err) != sdk.StatusRetry {
				t.Fatalf("status %v", sdk.StatusOf(err))
			}
			if n := r.countStatements(`(?i)^(copy|begin)`); n != 0 {
				t.Errorf("a load ran after the failed upload: %v", r.emu.Statements())
			}
			if r.count("up") != 0 {
				t.Error("rows visible")
			}
			if strings.Contains(err.Error()+logs.String(), "definitely-wrong-secret") || strings.Contains(err.Error()+logs.String(), r.svc.S3SecretKey) {
				t.Errorf("secret leaked: %v\n%s", err, logs.String())
			}
		})
	}
}
