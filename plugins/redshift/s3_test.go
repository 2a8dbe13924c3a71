package redshift_test

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

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
