// Command rsemu runs the Redshift emulator by hand, in front of a PostgreSQL
// and an S3 endpoint, until interrupted.
//
//	go run ./tools/rsemu -listen 127.0.0.1:5439
//
// Without flags it reads the services from PICOMQ_TEST_* or .services.env
// (see buildscripts/services.sh). Connect with the backend's credentials:
//
//	psql "postgres://picomq:picomq-secret-pw@127.0.0.1:5439/picomq?sslmode=disable"
//
// For benchmarks, model a cluster's cost (plugins/redshift/rsemu/README.md,
// "Cost model"): -copy-latency 1s -commit-latency 600ms.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

func main() {
	svc, _ := services.Lookup() // defaults only; flags may supply everything

	listen := flag.String("listen", "127.0.0.1:5439", "address to accept clients on")
	dsn := flag.String("backend", svc.PGDSN, "PostgreSQL DSN the emulator stores data in; its user/password are what clients must present")
	endpoint := flag.String("s3-endpoint", svc.S3Endpoint, "S3 endpoint COPY reads from")
	accessKey := flag.String("s3-access-key", svc.S3AccessKey, "S3 access key of the cluster's role")
	secretKey := flag.String("s3-secret-key", svc.S3SecretKey, "S3 secret key of the cluster's role")
	region := flag.String("s3-region", orDefault(svc.S3Region, "us-east-1"), "S3 region")
	roles := flag.String("roles", rsemu.DefaultRole, "comma-separated IAM role ARNs attached to the cluster")
	caseSensitive := flag.Bool("case-sensitive-identifiers", false, "initial enable_case_sensitive_identifier")
	tlsCert := flag.String("tls-cert", "", "PEM certificate (chain) to serve TLS with; with -tls-key. Default: no TLS, SSLRequest answered N")
	tlsKey := flag.String("tls-key", "", "PEM private key of -tls-cert")
	copyLatency := flag.Duration("copy-latency", 0, "fixed time every COPY waits before it loads (benchmarks: 1s)")
	commitLatency := flag.Duration("commit-latency", 0, "time every commit that wrote holds the cluster-wide commit queue (benchmarks: 600ms)")
	verbose := flag.Bool("v", false, "log connection events and commit queue turns")
	flag.Parse()

	if *dsn == "" {
		fmt.Fprintln(os.Stderr, "rsemu: -backend is required (or run buildscripts/services.sh start)")
		os.Exit(2)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	var attached []string
	for _, r := range strings.Split(*roles, ",") {
		if r = strings.TrimSpace(r); r != "" {
			attached = append(attached, r)
		}
	}
	var tlsConfig *tls.Config
	if *tlsCert != "" || *tlsKey != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rsemu: -tls-cert/-tls-key:", err)
			os.Exit(2)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	emu, err := rsemu.New(rsemu.Config{
		Addr:                     *listen,
		BackendDSN:               *dsn,
		S3Endpoint:               *endpoint,
		S3AccessKey:              *accessKey,
		S3SecretKey:              *secretKey,
		S3Region:                 *region,
		AttachedRoles:            attached,
		CaseSensitiveIdentifiers: *caseSensitive,
		TLS:                      tlsConfig,
		Logger:                   logger,
		CopyLatency:              *copyLatency,
		CommitLatency:            *commitLatency,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	logger.Info("rsemu listening", "addr", emu.Addr(), "roles", attached, "tls", tlsConfig != nil,
		"copy_latency", *copyLatency, "commit_latency", *commitLatency)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	if err := emu.Close(); err != nil {
		logger.Warn("rsemu: close", "err", err)
	}
	for _, st := range emu.StatementLog() {
		logger.Debug("statement", "session", st.Session, "sql", st.SQL)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
