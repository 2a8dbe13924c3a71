package connect_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/logbuf"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

// proxy forwards every connection to addr until the test ends.
func proxy(t *testing.T, ln net.Listener, addr string) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
}

// A Delta table behind an S3 endpoint that refuses connections at start:
// the built picomq-connect waits for it (state starting, /readyz 503, an
// open_retry line per attempt) instead of exiting 2, and writes the
// records once the endpoint answers.
func TestDeltaWaitsForS3AtStart(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	uri := "s3://" + bucket + "/orders"
	storage, _ := json.Marshal(map[string]string{
		"AWS_ACCESS_KEY_ID": svc.S3AccessKey, "AWS_SECRET_ACCESS_KEY": svc.S3SecretKey,
		"AWS_REGION": svc.S3Region, "AWS_ENDPOINT_URL": svc.S3Endpoint, "AWS_ALLOW_HTTP": "true",
		"AWS_S3_ALLOW_UNSAFE_RENAME": "true",
	})
	pyenv.Run(t, `
import json, sys
import pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([("id", pa.int64()), ("customer", pa.string())])
write_deltalake(sys.argv[2], pa.Table.from_pylist([], schema=schema), storage_options=json.loads(sys.argv[1]))
`, string(storage), uri)

	kf, cl := fakeKafka(t, "orders.eu")
	produce(t, cl, "orders.eu", 0, 10)

	// The sink's S3 endpoint: a port where nothing listens yet.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	unreachable := svc
	unreachable.S3Endpoint = "http://" + down
	defs := t.TempDir()
	writeDef(t, filepath.Join(defs, "orders.toml"), `type = "sink"
key = "orders_delta"
path = "libpicomq_connector_delta_sink"

[[topics]]
topics = ["orders.eu"]
schema = "json"
batch_length = 4
poll_interval = "100ms"
`+deltaS3PluginConfig(unreachable, uri))

	var logs logbuf.Buffer
	cmd := exec.Command(buildConnect(t), "--brokers", strings.Join(kf.ListenAddrs(), ","), "--plugin-dir", distDir(t),
		"--host", hosttest.BuildHost(t), "--log-format", "json", "--http", "127.0.0.1:0", defs)
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("picomq-connect stderr:\n%s", logs.String())
		}
	})

	addr := logs.WaitJSON(t, "http_listening", func(m map[string]any) bool { return m["event"] == "http_listening" })["addr"].(string)
	retry := logs.WaitJSON(t, "open_retry attempt 2", func(m map[string]any) bool {
		return m["event"] == "open_retry" && m["attempt"] == 2.0
	})
	if err, _ := retry["err"].(string); !strings.HasPrefix(err, "open: RETRY: ") {
		t.Errorf("open_retry err %q", err)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || string(body) != "orders_delta starting\n" {
		t.Errorf("/readyz while S3 refuses: %d %q", resp.StatusCode, body)
	}
	select {
	case err := <-exited:
		t.Fatalf("picomq-connect exited while S3 was down: %v", err)
	default:
	}

	// The endpoint comes back.
	ln, err = net.Listen("tcp", down)
	if err != nil {
		t.Fatal(err)
	}
	minio, err := url.Parse(svc.S3Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy(t, ln, minio.Host)
	waitCommitted(t, kadm.NewClient(cl), "orders.eu", 10)
	resp, err = http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz once open: %d", resp.StatusCode)
	}
	out := pyenv.Run(t, `
import json, sys
from deltalake import DeltaTable
t = DeltaTable(sys.argv[2], storage_options=json.loads(sys.argv[1]))
print(json.dumps(sorted(r["id"] for r in t.to_pyarrow_table().to_pylist())))
`, string(storage), uri)
	if strings.TrimSpace(out) != "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]" {
		t.Errorf("table ids %s", out)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 0) {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}
