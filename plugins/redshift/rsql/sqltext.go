package rsql

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// StagingPrefix makes the staging twin of a target table: staging_<table>.
const StagingPrefix = "staging_"

// Staging returns the name of table's staging twin.
func Staging(table string) string { return StagingPrefix + table }

// Ident quotes name as one SQL identifier: the name is wrapped in double
// quotes and every embedded double quote is doubled, so any name, a topic
// with a quote or a semicolon in it included, stays one identifier. A dot
// is part of the name, never a schema separator.
func Ident(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// Literal quotes s as a SQL string literal by doubling single quotes.
//
// Backslashes are not escaped: Redshift and PostgreSQL read them
// differently, so s must not contain one. CheckLiteral says whether s is
// safe; the sink checks every configured value that ends up in a literal
// (bucket, prefix, role) when it opens.
func Literal(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// CheckLiteral reports why s cannot be written with Literal: a backslash,
// a control character or invalid UTF-8.
func CheckLiteral(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range s {
		switch {
		case r == '\\':
			return errors.New("contains a backslash, which Redshift and PostgreSQL string literals read differently")
		case unicode.IsControl(r):
			return fmt.Errorf("contains the control character %U", r)
		}
	}
	return nil
}

// CheckTableName reports why name cannot be a target table: empty, not
// valid UTF-8, a control character, so long that the staging name would
// exceed Redshift's identifier limit (Redshift would truncate it, and two
// targets could then share one staging table), or itself a staging name.
//
// A target named staging_<x> is the staging twin of target <x>: loading <x>
// would move that table's rows into <x> and then delete them. Redshift folds
// identifiers to lower case, so the prefix is compared case-insensitively.
func CheckTableName(name string) error {
	if name == "" {
		return errors.New("the table name is empty")
	}
	if len(name) >= len(StagingPrefix) && strings.EqualFold(name[:len(StagingPrefix)], StagingPrefix) {
		return fmt.Errorf("table name %q starts with %q, the prefix of the sink's staging tables: it would be the staging twin of table %q, whose loads move and delete its rows; choose a target_table that yields another name",
			name, StagingPrefix, name[len(StagingPrefix):])
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("table name %q is not valid UTF-8", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("table name %q contains the control character %U", name, r)
		}
	}
	if n := len(Staging(name)); n > IdentifierMax {
		return fmt.Errorf("table name %q is too long: its staging table %s%s... is %d bytes and Redshift identifiers hold at most %d",
			name, StagingPrefix, truncate(name, 16), n, IdentifierMax)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// columnList is "a, b, c". The names are the sink's own lower-case names,
// which need no quoting.
func columnList(cols []Column) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name)
	}
	return b.String()
}

// loadList is the INSERT's select list: each column, or its Load
// expression.
func loadList(cols []Column) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		if c.Load != "" {
			b.WriteString(c.Load)
		} else {
			b.WriteString(c.Name)
		}
	}
	return b.String()
}

// CreateTable is CREATE TABLE IF NOT EXISTS for table with the layout's
// columns, in the spec's format:
//
//	CREATE TABLE IF NOT EXISTS "orders_eu" (
//	  id VARCHAR(512),
//	  ...
//	);
func CreateTable(table string, l *Layout) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS ")
	b.WriteString(Ident(table))
	b.WriteString(" (\n")
	for i, c := range l.Columns {
		b.WriteString("  ")
		b.WriteString(c.Name)
		b.WriteByte(' ')
		b.WriteString(c.Type)
		if i < len(l.Columns)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(")")
	return b.String()
}

// Lock is LOCK on the staging table. Held until the transaction ends, it
// makes every writer of one target take turns over COPY, INSERT and the
// staging cleanup. Redshift's LOCK takes no mode: it is exclusive.
func Lock(staging string) string {
	return "LOCK " + Ident(staging)
}

// Copy loads one Parquet file into the staging table. Redshift maps Parquet
// columns to the column list by position. There is no REGION option: the
// bucket must be in the cluster's region.
//
// STATUPDATE OFF: the staging table is empty before every COPY, and COPY
// into an empty table otherwise refreshes its planner statistics each time,
// work that describes rows about to be deleted. The INSERT reads all of
// staging whatever the statistics say. There is no COMPUPDATE OFF: Redshift
// accepts only ACCEPTINVCHARS, FILLRECORD, MANIFEST, EXPLICIT_IDS and
// STATUPDATE (besides FROM and the authorization) with Parquet, and never
// applies compression encodings on a columnar COPY.
func Copy(staging string, l *Layout, s3URL, role string) string {
	return "COPY " + Ident(staging) + " (" + columnList(l.Columns) + ") FROM " + Literal(s3URL) +
		" CREDENTIALS " + Literal("aws_iam_role="+role) + " FORMAT AS PARQUET STATUPDATE OFF"
}

// CopyManifest loads the Parquet files a manifest (Manifest) lists into the
// staging table in one COPY: the statement of Copy with MANIFEST, so the
// URL names the manifest object.
func CopyManifest(staging string, l *Layout, manifestURL, role string) string {
	return "COPY " + Ident(staging) + " (" + columnList(l.Columns) + ") FROM " + Literal(manifestURL) +
		" CREDENTIALS " + Literal("aws_iam_role="+role) + " FORMAT AS PARQUET MANIFEST STATUPDATE OFF"
}

// StagedDuplicates lists the ids of staged rows the target already has:
// the rows the INSERT will leave out. Sent before the INSERT of a load that
// carries several batches, it tells which batch each skipped row belongs
// to; it returns no row unless a batch is a replay.
func StagedDuplicates(table, staging string) string {
	return "SELECT staged.id FROM " + Ident(staging) + " staged" +
		" WHERE EXISTS (SELECT 1 FROM " + Ident(table) + " existing WHERE existing.id = staged.id)"
}

// Script joins statements into the text of one multi-statement simple
// query, so they cost one round trip. The server runs them in order and
// stops at the first error, skipping the rest. The statements are the
// sink's own: any semicolon inside them is within a quoted literal or
// identifier.
func Script(stmts ...string) string {
	return strings.Join(stmts, ";\n")
}

// Insert moves staged rows into the target: one row per id from staging
// (ROW_NUMBER over the id), and only ids the target does not have yet, so a
// replayed record changes nothing. It reads all of staging, which also picks
// up rows a crashed writer left behind.
//
// A column with a Load expression (a SUPER payload: JSON_PARSE) is read
// through it, so a payload Redshift cannot parse fails the INSERT and the
// whole load transaction.
func Insert(table, staging string, l *Layout) string {
	cols := columnList(l.Columns)
	return "INSERT INTO " + Ident(table) + " (" + cols + ")" +
		" SELECT " + loadList(l.Columns) +
		" FROM (SELECT " + cols + ", ROW_NUMBER() OVER (PARTITION BY id ORDER BY id) AS pico_rn FROM " + Ident(staging) + ") staged" +
		" WHERE staged.pico_rn = 1" +
		" AND NOT EXISTS (SELECT 1 FROM " + Ident(table) + " existing WHERE existing.id = staged.id)"
}

// DeleteAll empties the staging table inside the load transaction. It is a
// DELETE and not a TRUNCATE because Redshift's TRUNCATE commits the open
// transaction, which would release the lock early.
func DeleteAll(staging string) string {
	return "DELETE FROM " + Ident(staging)
}

// TableDefQuery lists a table's columns and types from pg_table_def, by
// bare table name ($1). pg_table_def only shows tables in schemas on the
// search_path.
const TableDefQuery = `SELECT "column", type FROM pg_table_def WHERE tablename = $1`

// S3URL is the COPY source for an object key.
func S3URL(bucket, key string) string { return "s3://" + bucket + "/" + key }
