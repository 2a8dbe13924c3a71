package rsemu

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// catalogVersion changes whenever catalogSQL changes shape, so a database
// bootstrapped by an older emulator is brought up to date.
const catalogVersion = 4

// catalogLockKey serializes bootstraps of one database (pg_advisory_xact_lock).
const catalogLockKey = 0x7273656d75 // "rsemu"

// Names a client may use for Redshift system views the emulator provides.
// Statements are rewritten to read rsemu_catalog.<name> instead.
var emulatedViews = map[string]bool{
	"pg_table_def":          true,
	"sys_load_error_detail": true,
	"stl_load_errors":       true,
}

// catalogSQL creates the shadow catalog in the backend database:
//
//   - rsemu_catalog.columns: the declared Redshift type of every column of
//     every table created through the emulator, keyed by (relid, attnum) so
//     renames keep working and a dropped table's rows are simply never joined.
//   - rsemu_catalog.load_errors: COPY load errors, written on a separate
//     connection so they survive the aborted transaction, as Redshift's
//     system tables do.
//   - the *_fits functions behind the CHECK constraints that give VARCHAR,
//     CHAR and VARBYTE Redshift's byte-length semantics with Redshift's
//     error text.
//   - views with Redshift's names and columns.
var catalogSQL = fmt.Sprintf(`
SELECT pg_advisory_xact_lock(%[1]d);
CREATE SCHEMA IF NOT EXISTS rsemu_catalog;
CREATE TABLE IF NOT EXISTS rsemu_catalog.meta (version integer NOT NULL);
CREATE TABLE IF NOT EXISTS rsemu_catalog.columns (
	relid      oid      NOT NULL,
	attnum     smallint NOT NULL,
	family     text     NOT NULL,
	length     integer  NOT NULL DEFAULT 0,
	precision  integer  NOT NULL DEFAULT 0,
	scale      integer  NOT NULL DEFAULT 0,
	rs_type    text     NOT NULL,
	encoding   text     NOT NULL DEFAULT 'none',
	distkey    boolean  NOT NULL DEFAULT false,
	sortkey    integer  NOT NULL DEFAULT 0,
	PRIMARY KEY (relid, attnum)
);
CREATE TABLE IF NOT EXISTS rsemu_catalog.load_errors (
	user_id         integer,
	query_id        bigint,
	transaction_id  bigint,
	session_id      integer,
	database_name   text,
	table_id        integer,
	start_time      timestamp without time zone,
	file_name       text,
	line_number     bigint,
	column_name     text,
	column_type     text,
	column_length   text,
	position        integer,
	error_code      integer,
	error_message   text,
	raw_line        text,
	raw_field_value text
);
CREATE SEQUENCE IF NOT EXISTS rsemu_catalog.query_ids;

CREATE OR REPLACE FUNCTION rsemu_catalog.varchar_fits(v text, n integer) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $fn$
BEGIN
	IF v IS NOT NULL AND octet_length(v) > n THEN
		RAISE EXCEPTION 'value too long for type character varying(%%)', n USING ERRCODE = '22001';
	END IF;
	RETURN true;
END
$fn$;

CREATE OR REPLACE FUNCTION rsemu_catalog.char_fits(v text, n integer) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $fn$
BEGIN
	IF v IS NOT NULL AND octet_length(v) <> char_length(v) THEN
		RAISE EXCEPTION 'Multibyte character not supported for CHAR (Hint: try using VARCHAR)' USING ERRCODE = '22021';
	END IF;
	IF v IS NOT NULL AND octet_length(v) > n THEN
		RAISE EXCEPTION 'value too long for type character(%%)', n USING ERRCODE = '22001';
	END IF;
	RETURN true;
END
$fn$;

CREATE OR REPLACE FUNCTION rsemu_catalog.varbyte_fits(v bytea, n integer) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $fn$
BEGIN
	IF v IS NOT NULL AND octet_length(v) > n THEN
		RAISE EXCEPTION 'value too long for type varbyte(%%)', n USING ERRCODE = '22001';
	END IF;
	RETURN true;
END
$fn$;

-- JSON_PARSE: SUPER is jsonb. The text goes through json first, which keeps
-- duplicate attributes, so Redshift's refusals can be checked before jsonb
-- (which keeps the last of duplicates silently) is built. The walk is a
-- loop over a work list, not recursion, so 1000 levels do not exhaust the
-- backend's stack.
CREATE OR REPLACE FUNCTION rsemu_catalog.json_parse(v text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
	j      json;
	todo   json[];
	depths integer[];
	cur    json;
	d      integer;
	t      text;
	dups   integer;
BEGIN
	IF v IS NULL THEN
		RETURN NULL;
	END IF;
	IF octet_length(v) > %[3]d THEN
		RAISE EXCEPTION 'JSON parsing error' USING ERRCODE = 'XX000',
			DETAIL = format('The JSON text is %%s bytes; a SUPER value holds at most %[3]d.', octet_length(v));
	END IF;
	BEGIN
		j := v::json;
	EXCEPTION WHEN invalid_text_representation OR untranslatable_character THEN
		RAISE EXCEPTION 'JSON parsing error' USING ERRCODE = 'XX000', DETAIL = SQLERRM;
	END;
	todo := ARRAY[j];
	depths := ARRAY[0];
	WHILE cardinality(todo) > 0 LOOP
		cur := todo[cardinality(todo)];
		d := depths[cardinality(depths)];
		todo := todo[1:cardinality(todo) - 1];
		depths := depths[1:cardinality(depths) - 1];
		t := json_typeof(cur);
		IF t IN ('object', 'array') THEN
			d := d + 1;
			IF d > %[4]d THEN
				RAISE EXCEPTION 'JSON parsing error' USING ERRCODE = 'XX000',
					DETAIL = 'Arrays and objects are nested deeper than %[4]d levels.';
			END IF;
		END IF;
		IF t = 'object' THEN
			SELECT count(*) - count(DISTINCT key) INTO dups FROM json_each(cur);
			IF dups > 0 THEN
				RAISE EXCEPTION 'JSON parsing error' USING ERRCODE = 'XX000',
					DETAIL = 'Duplicate attribute name in an object (json_parse_dedup_attributes is off).';
			END IF;
			todo := todo || ARRAY(SELECT value FROM json_each(cur));
			depths := depths || array_fill(d, ARRAY[(SELECT count(*)::integer FROM json_each(cur))]);
		ELSIF t = 'array' THEN
			todo := todo || ARRAY(SELECT value FROM json_array_elements(cur));
			depths := depths || array_fill(d, ARRAY[json_array_length(cur)]);
		ELSIF t = 'string' AND octet_length(cur #>> '{}') > %[5]d THEN
			RAISE EXCEPTION 'JSON parsing error' USING ERRCODE = 'XX000',
				DETAIL = format('A string value is %%s bytes, over the %[5]d bytes one string in SUPER holds (json_parse_truncate_strings is off).',
					octet_length(cur #>> '{}'));
		END IF;
	END LOOP;
	RETURN j::jsonb;
EXCEPTION WHEN untranslatable_character THEN
	-- jsonb refuses \u0000, which json took.
	RAISE EXCEPTION 'JSON parsing error' USING ERRCODE = 'XX000', DETAIL = SQLERRM;
END
$fn$;

CREATE OR REPLACE FUNCTION rsemu_catalog.json_parse(v bytea) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
	txt text;
BEGIN
	IF v IS NULL THEN
		RETURN NULL;
	END IF;
	BEGIN
		txt := convert_from(v, 'UTF8');
	EXCEPTION WHEN character_not_in_repertoire OR untranslatable_character THEN
		RAISE EXCEPTION 'JSON parsing error' USING ERRCODE = 'XX000', DETAIL = SQLERRM;
	END;
	RETURN rsemu_catalog.json_parse(txt);
END
$fn$;

DROP VIEW IF EXISTS rsemu_catalog.pg_table_def;
CREATE VIEW rsemu_catalog.pg_table_def AS
SELECT n.nspname AS schemaname,
       c.relname AS tablename,
       a.attname AS "column",
       COALESCE(rc.rs_type, format_type(a.atttypid, a.atttypmod)) AS type,
       COALESCE(rc.encoding, 'none')::character(32) AS encoding,
       COALESCE(rc.distkey, false) AS distkey,
       COALESCE(rc.sortkey, 0) AS sortkey,
       a.attnotnull AS "notnull"
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN rsemu_catalog.columns rc ON rc.relid = c.oid AND rc.attnum = a.attnum
WHERE c.relkind IN ('r', 'p')
  AND n.nspname <> 'rsemu_catalog'
  AND pg_catalog.pg_table_is_visible(c.oid);

DROP VIEW IF EXISTS rsemu_catalog.sys_load_error_detail;
CREATE VIEW rsemu_catalog.sys_load_error_detail AS
SELECT user_id, query_id, transaction_id, session_id,
       database_name::character(64) AS database_name,
       table_id, start_time,
       file_name::character(256) AS file_name,
       line_number,
       column_name::character(127) AS column_name,
       column_type::character(10) AS column_type,
       column_length::character(10) AS column_length,
       position, error_code,
       error_message::character(512) AS error_message
FROM rsemu_catalog.load_errors;

DROP VIEW IF EXISTS rsemu_catalog.stl_load_errors;
CREATE VIEW rsemu_catalog.stl_load_errors AS
SELECT user_id AS userid, 0 AS slice, table_id AS tbl, start_time AS starttime,
       session_id AS session, query_id::integer AS query,
       file_name::character(256) AS filename, line_number,
       column_name::character(127) AS colname,
       column_type::character(10) AS type,
       column_length::character(10) AS col_length,
       position,
       raw_line::character(1024) AS raw_line,
       raw_field_value::character(1024) AS raw_field_value,
       error_code AS err_code,
       error_message::character(100) AS err_reason
FROM rsemu_catalog.load_errors;

GRANT USAGE ON SCHEMA rsemu_catalog TO PUBLIC;
GRANT SELECT ON ALL TABLES IN SCHEMA rsemu_catalog TO PUBLIC;
DELETE FROM rsemu_catalog.meta;
INSERT INTO rsemu_catalog.meta VALUES (%[2]d);
`, catalogLockKey, catalogVersion, SuperMax, SuperDepthMax, SuperStringMax)

// ensureCatalog bootstraps the shadow catalog in the database conn is
// connected to, unless it is already at catalogVersion.
func ensureCatalog(ctx context.Context, conn *pgconn.PgConn) error {
	rr := conn.ExecParams(ctx, "SELECT version FROM rsemu_catalog.meta", nil, nil, nil, nil)
	res := rr.Read()
	if res.Err == nil && len(res.Rows) == 1 && string(res.Rows[0][0]) == fmt.Sprint(catalogVersion) {
		return nil
	}
	// The whole script is one simple query, so it runs in one implicit
	// transaction behind the advisory lock.
	if _, err := conn.Exec(ctx, catalogSQL).ReadAll(); err != nil {
		return fmt.Errorf("rsemu: bootstrap rsemu_catalog: %w", err)
	}
	return nil
}
