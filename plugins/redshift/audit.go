package redshift

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/retry"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// What `picomq-connect audit` (connect/audit) needs of a Redshift sink,
// decided here so that it reads the tables the sink loads, with the sink's
// own connection settings: the plugin_config decoded with its environment
// overrides, the table of each topic, and a small pool (IAM logins
// included).

// Audit is a Redshift sink's configuration and a connection pool, as an
// audit reads them.
type Audit struct {
	cfg        Config
	p          *parsed
	pool       *pgxpool.Pool
	redactText func(string) string // replaces the secrets in every message this file makes
}

// auditConns is the audit's pool size: it reads one table at a time.
const auditConns = 2

// SQLStateUndefinedTable is what a query of a table that does not exist
// fails with.
const SQLStateUndefinedTable = "42P01"

// NewAudit decodes pluginConfig for the sink key with env's overrides, as
// the sink's open() would, and connects (bounded by the sink's open
// timeout). Close it.
func NewAudit(ctx context.Context, pluginConfig json.RawMessage, key string, env sdk.Env) (*Audit, error) {
	schema, err := sdk.SchemaOf[Config]()
	if err != nil {
		return nil, err
	}
	a := &Audit{}
	dec, err := schema.Decode(pluginConfig, key, env, &a.cfg)
	if err != nil {
		return nil, err
	}
	if a.p, _, err = a.cfg.validate(); err != nil {
		return nil, err
	}
	pcfg, password, err := poolConfig(a.cfg.ConnectionString, auditConns, a.cfg.StatementTimeout)
	a.redactText = sdk.Redactor(append(dec.Secrets, password))
	if err != nil {
		// pgx's parse errors can quote the connection string: say only
		// which key is wrong.
		return nil, sdk.BadConfigf("%s: %s", keyConnectionString, a.redact(err.Error()))
	}
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if a.p.iam {
		if _, err := useIAM(octx, &a.cfg, pcfg, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			return nil, err
		}
	}
	if a.pool, err = pgxpool.NewWithConfig(octx, pcfg); err != nil {
		return nil, sdk.BadConfigf("%s: %s", keyConnectionString, a.redact(err.Error()))
	}
	if _, err := a.pool.Exec(octx, "SELECT 1"); err != nil {
		a.pool.Close()
		return nil, fmt.Errorf("Failed to connect to Redshift: %s", a.redact(describeErr(err)))
	}
	return a, nil
}

// Close closes the pool.
func (a *Audit) Close() { a.pool.Close() }

// Table is the target table of topic's records, resolved as Consume
// resolves it.
func (a *Audit) Table(topic string) (string, error) {
	name, err := a.p.table.Resolve(topic)
	if err != nil {
		return "", fmt.Errorf("%s: %v", keyTargetTable, err)
	}
	if err := rsql.CheckTableName(name); err != nil {
		return "", fmt.Errorf("%s: %v", keyTargetTable, err)
	}
	return name, nil
}

// Upsert reports whether the sink runs with write_mode = "upsert": its
// targets keep each key's last change only, so the audit reads how far
// they were applied (Applied) instead of their ids.
func (a *Audit) Upsert() bool { return a.p.changes != nil }

// Offsets is the offsets table of an upsert target (offsets_<table>).
func (a *Audit) Offsets(table string) string { return rsql.Offsets(table) }

// IDs streams the (topic, partition, offset) of every row of table whose
// id names one of topics, ordered by topic, partition and offset. A table
// that does not exist is exists false.
func (a *Audit) IDs(ctx context.Context, table string, topics []string, fn func(topic string, partition int32, offset int64)) (exists bool, err error) {
	return a.stream(ctx, "ids", table, topics, rsql.AuditIDs, fn)
}

// Applied streams the (topic, partition, applied offset) of every row of
// an upsert target's offsets table whose topic is one of topics: every
// change of the partition up to the applied offset was applied (or skipped
// as a replay of one that was). A table that does not exist is exists
// false.
func (a *Audit) Applied(ctx context.Context, table string, topics []string, fn func(topic string, partition int32, applied int64)) (exists bool, err error) {
	return a.stream(ctx, "applied offsets", rsql.Offsets(table), topics, rsql.AuditApplied, fn)
}

// stream runs query(table, topics), whose rows are a topic, a partition
// and an offset, and calls fn with each.
func (a *Audit) stream(ctx context.Context, what, table string, topics []string, query func(string, []string) string,
	fn func(topic string, partition int32, offset int64)) (exists bool, err error) {
	for _, t := range topics {
		if err := rsql.CheckLiteral(t); err != nil {
			return false, fmt.Errorf("topic %q %v", t, err)
		}
	}
	rows, err := a.pool.Query(ctx, query(table, topics))
	if err != nil {
		if retry.SQLState(err) == SQLStateUndefinedTable {
			return false, nil
		}
		return false, fmt.Errorf("reading %s of %s: %s", what, table, a.redact(describeErr(err)))
	}
	defer rows.Close()
	var topic string
	var part int32
	var off int64
	for rows.Next() {
		if err := rows.Scan(&topic, &part, &off); err != nil {
			return true, fmt.Errorf("reading %s of %s: %w", what, table, err)
		}
		fn(topic, part, off)
	}
	if err := rows.Err(); err != nil {
		if retry.SQLState(err) == SQLStateUndefinedTable {
			return false, nil
		}
		return true, fmt.Errorf("reading %s of %s: %s", what, table, a.redact(describeErr(err)))
	}
	return true, nil
}

// redact replaces the sink's secrets in msg: this process has no host
// redacting what it prints.
func (a *Audit) redact(msg string) string { return a.redactText(msg) }
