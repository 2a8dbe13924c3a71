package services

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Database is a PostgreSQL database created for one test.
type Database struct {
	// Name is the database name, e.g. picomq_t_1a2b3c4d_testcopy.
	Name string
	// DSN connects to Name with the same account and options as Services.PGDSN.
	DSN string
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDatabase creates an empty database for this test and drops it (with
// FORCE, so connections a test leaked do not block it) in t.Cleanup.
func (s Services) NewDatabase(t testing.TB) Database {
	t.Helper()
	name := "picomq_t_" + randomHex(4) + "_" + nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 63 {
		name = name[:63]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.PGDSN)
	if err != nil {
		t.Fatalf("services: connect to PostgreSQL (%s): %v\nIs it running? buildscripts/services.sh start", redactDSN(s.PGDSN), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("services: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, s.PGDSN)
		if err != nil {
			t.Errorf("services: drop database %s: connect: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("services: drop database %s: %v", name, err)
		}
	})
	dsn, err := WithDatabase(s.PGDSN, name)
	if err != nil {
		t.Fatalf("services: %v", err)
	}
	return Database{Name: name, DSN: dsn}
}

// WithDatabase returns dsn (a URL or a key=value string) pointing at database
// name instead.
func WithDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse DSN: %w", err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	return dsn + " dbname='" + strings.ReplaceAll(strings.ReplaceAll(name, `\`, `\\`), `'`, `\'`) + "'", nil
}

// redactDSN hides the password of a URL DSN for messages.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return "<dsn>"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
