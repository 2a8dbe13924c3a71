package services

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv"
)

// Private is a set of service instances of one test's own, started by
// buildscripts/services.sh in a state directory of their own on free
// ports: a test may stop and restart them (a chaos test does) without
// disturbing the shared services other test packages, run in parallel by
// `go test`, are using.
type Private struct {
	Services
	script string
	env    []string
}

// StartPrivate starts the named services (postgres, minio; see
// services.sh) and stops them, keeping nothing, in t.Cleanup. Installing
// is services.sh's business: the binaries the shared services use are
// reused.
func StartPrivate(t testing.TB, names ...string) *Private {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parents are mode 0700, and PostgreSQL runs as the
	// postgres user when the tests run as root.
	state, err := os.MkdirTemp("", "picomq-private-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o755); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(state, "services.env")
	p := &Private{script: filepath.Join(root, "buildscripts", "services.sh")}
	p.env = append(os.Environ(),
		"PICOMQ_SERVICES_DIR="+state,
		"PICOMQ_SERVICES_ENV_FILE="+envFile,
		"PICOMQ_PG_PORT="+freePort(t),
		"PICOMQ_MINIO_PORT="+freePort(t),
		"PICOMQ_MINIO_CONSOLE="+freePort(t),
		"PICOMQ_KAFKA_PORT="+freePort(t),
		"PICOMQ_KAFKA_CONTROLLER_PORT="+freePort(t),
		"PICOMQ_AZURITE_PORT="+freePort(t),
		"PICOMQ_GCS_PORT="+freePort(t),
	)
	t.Cleanup(func() {
		if err := p.run("stop", names...); err != nil {
			t.Errorf("stopping private services: %v", err)
		}
		os.RemoveAll(state)
	})
	if err := p.run("start", names...); err != nil {
		t.Fatalf("starting private services %v: %v", names, err)
	}
	vals, err := parseEnvFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	p.Services = Services{
		PGDSN:        vals[EnvPGDSN],
		S3Endpoint:   vals[EnvS3Endpoint],
		S3AccessKey:  vals[EnvS3AccessKey],
		S3SecretKey:  vals[EnvS3SecretKey],
		S3Region:     vals[EnvS3Region],
		KafkaBrokers: splitList(vals[EnvKafkaBrokers]),
	}
	return p
}

// Stop stops the named services; their data stays.
func (p *Private) Stop(t testing.TB, names ...string) {
	t.Helper()
	if err := p.run("stop", names...); err != nil {
		t.Fatalf("stopping %v: %v", names, err)
	}
}

// Start starts the named services again, on the same ports with the same
// data, and waits until they answer.
func (p *Private) Start(t testing.TB, names ...string) {
	t.Helper()
	if err := p.run("start", names...); err != nil {
		t.Fatalf("starting %v: %v", names, err)
	}
}

// Restart is Stop, then Start.
func (p *Private) Restart(t testing.TB, names ...string) {
	t.Helper()
	p.Stop(t, names...)
	p.Start(t, names...)
}

func (p *Private) run(cmd string, names ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, p.script, append([]string{cmd}, names...)...)
	c.Env = p.env
	out, err := c.CombinedOutput()
	if err != nil {
		return fmt.Errorf("services.sh %s %v: %v\n%s", cmd, names, err, out)
	}
	return nil
}

// freePort is a loopback TCP port nobody listened on a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
