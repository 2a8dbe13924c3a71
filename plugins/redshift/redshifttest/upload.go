package redshifttest

import (
	"net"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// S3UploadFailed: "S3 upload failed" / "S3 upload failed with status 403":
// the runtime's S3 credentials are wrong, or the bucket is missing. The
// batch fails RETRY before any SQL; no secret is in the message, the logs
// or the metrics.
func S3UploadFailed(t *testing.T, d sinkdriver.Driver, e *Env) {
	e.NeedEmulator("the cases replace MinIO's keys, bucket and endpoint, and the test reads the statement log")
	s3Secret, _ := e.base["aws_secret_access_key"].(string)
	t.Run("one instance per case", func(t *testing.T) {
		rt := e.Start(d)
		for _, tc := range []struct {
			name   string
			config map[string]any
			want   string
		}{
			{"wrong secret key", map[string]any{"aws_secret_access_key": "definitely-wrong-secret-key"}, "S3 upload failed with status 403 (s3://" + e.Bucket + "/redshift/orders/"},
			{"unknown access key", map[string]any{"aws_access_key_id": "AKIANOBODY0000000000"}, "S3 upload failed with status 403 (s3://"},
			{"missing bucket", map[string]any{"s3_bucket": "picomq-no-such-bucket-7f3a9c"}, "S3 upload failed with status 404 (s3://picomq-no-such-bucket-7f3a9c/"},
			{"unreachable endpoint", map[string]any{"s3_endpoint": "http://" + closedPort(t)}, "S3 upload failed (s3://"},
		} {
			cfg := e.Config(map[string]any{"target_table": "up"})
			for k, v := range tc.config {
				cfg[k] = v
			}
			inst := rt.Open("upload", cfg)
			e.Emu.ResetStatements()
			err := inst.Consume(Batch("orders", 0, 5))
			se := WantStatus(t, err, hostclient.StatusRetry, tc.want)
			if n := e.Emu.CountStatements(`.`); n != 0 {
				t.Errorf("%s: SQL after the failed upload: %s", tc.name, FirstWords(e.Emu))
			}
			if e.Count("up") != 0 {
				t.Errorf("%s: rows visible", tc.name)
			}
			m, err := inst.Metrics() // last_error is the message, redacted as well
			if err != nil || !strings.Contains(m, "S3 upload failed") {
				t.Errorf("%s: metrics %s %v", tc.name, m, err)
			}
			NoSecret(t, []string{se.Message, strings.Join(inst.Logs(), "\n"), m}, "definitely-wrong-secret-key", s3Secret)
		}
		if objs := e.Objects(""); len(objs) != 0 {
			t.Errorf("objects %v", objs)
		}
	})
	for _, tt := range []struct {
		name   string
		config func(t *testing.T) map[string]any
		want   string
	}{
		{"wrong secret key", func(*testing.T) map[string]any {
			return map[string]any{"aws_secret_access_key": "definitely-wrong-secret"}
		}, "S3 upload failed with status 403 (s3://"},
		{"missing bucket", func(*testing.T) map[string]any {
			return map[string]any{"s3_bucket": "picomq-no-such-bucket-7f3a9c"}
		}, "S3 upload failed with status 404 (s3://picomq-no-such-bucket-"},
		{"unreachable endpoint", func(t *testing.T) map[string]any {
			return map[string]any{"s3_endpoint": "http://" + closedPort(t)}
		}, "S3 upload failed (s3://"},
	} {
		t.Run("first batch/"+tt.name, func(t *testing.T) {
			e := NewEnv(t)
			cfg := e.Config(map[string]any{"target_table": "up"})
			for k, v := range tt.config(t) {
				cfg[k] = v
			}
			inst := e.Start(d).Open("upload", cfg)
			e.Emu.ResetStatements()
			se := asStatus(t, inst.Consume(Batch("orders", 0, 5)))
			if !strings.HasPrefix(se.Message, tt.want) {
				t.Fatalf("got  %v\nwant %s", se.Message, tt.want)
			}
			if se.Code != hostclient.StatusRetry {
				t.Fatalf("status %v", se.Code)
			}
			if n := e.Emu.CountStatements(`(?i)^(copy|begin)`); n != 0 {
				t.Errorf("a load ran after the failed upload: %v", e.Emu.Statements())
			}
			if e.Count("up") != 0 {
				t.Error("rows visible")
			}
			logs := strings.Join(inst.Logs(), "\n")
			if strings.Contains(se.Message+logs, "definitely-wrong-secret") || strings.Contains(se.Message+logs, s3Secret) {
				t.Errorf("secret leaked: %v\n%s", se.Message, logs)
			}
		})
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// NoSecret fails the test if any of the texts contains one of secrets.
func NoSecret(t *testing.T, texts []string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, txt := range texts {
			if strings.Contains(txt, s) {
				t.Errorf("secret %q leaked in %q", s, txt)
			}
		}
	}
}
