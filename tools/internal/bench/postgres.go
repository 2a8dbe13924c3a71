package bench

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

// CreateDatabase creates database name next to the one base names and
// returns its DSN and a function that drops it (errors printed, not
// returned: it runs on the way out).
func CreateDatabase(ctx context.Context, base, name string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	dsn, err := services.WithDatabase(base, name)
	if err != nil {
		return "", nil, err
	}
	drop := func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			fmt.Fprintln(os.Stderr, "drop database:", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintln(os.Stderr, "drop database:", err)
		}
	}
	return dsn, drop, nil
}
