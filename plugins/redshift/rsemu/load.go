package rsemu

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

const copyTimeout = 10 * time.Minute

// target is one column a COPY loads.
type target struct {
	name    string
	notNull bool
	typ     colType
}

// loadError is a row-level COPY failure, recorded in rsemu_catalog.load_errors,
// or, with backend set, the error PostgreSQL gave for the value when the
// emulator loaded rows with INSERTs (not a load error, not recorded).
type loadError struct {
	code    int
	message string
	raw     string
	backend *Error
}

// copy runs an emulated COPY: list the prefix, read every object as Parquet,
// check each value against the column's Redshift type, and insert the rows
// inside the client's transaction (or one of its own). Any failure fails the
// whole COPY and loads nothing.
func (s *session) copy(cs *copyStmt) (*result, *Error, error) {
	if e := s.srv.authorize(cs.roles); e != nil {
		return nil, e, nil
	}
	if s.srv.s3 == nil {
		return nil, &Error{Code: CodeInternal, Message: "rsemu: COPY needs Config.S3Endpoint"}, nil
	}
	s.srv.copyCost()
	table, targets, relid, e, err := s.copyTargets(cs)
	if err != nil || e != nil {
		return nil, e, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), copyTimeout)
	defer cancel()
	files, e := s.srv.copySources(ctx, cs)
	if e != nil {
		return nil, e, nil
	}

	own := s.tx == 'I'
	if own {
		if _, e, err := s.mustInternal("BEGIN"); err != nil || e != nil {
			return nil, pgError(e), err
		}
	}
	abort := func(e *Error, err error) (*result, *Error, error) {
		if own && err == nil {
			_, err = s.internal("ROLLBACK")
		}
		return nil, e, err
	}

	colList := make([]string, len(targets))
	for k, t := range targets {
		colList[k] = quoteIdent(t.name)
	}
	in := &copyIn{s: s, sql: "COPY " + table + " (" + strings.Join(colList, ", ") + ") FROM STDIN"}
	// refuse abandons the backend COPY before the COPY fails.
	refuse := func(e *Error) (*result, *Error, error) {
		if err := in.fail(); err != nil {
			return nil, nil, err
		}
		return abort(e, nil)
	}

	total := 0
	startTime := time.Now().UTC()
	for _, src := range files {
		file := "s3://" + src.bucket + "/" + src.key
		body, e := src.body, (*Error)(nil)
		if body == nil {
			body, e = s.srv.getObject(ctx, src.bucket, src.key)
		}
		if e != nil {
			return refuse(e)
		}
		if src.length >= 0 && int64(len(body)) != src.length {
			// Spectrum reads a Parquet footer at the offset the manifest's
			// content_length gives, so a wrong length cannot be read.
			return refuse(spectrumError(15001, fmt.Sprintf("File '%s' has content_length %d in the manifest, but the object has %d bytes",
				file, src.length, len(body))))
		}
		f, perr := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
		if perr != nil {
			return refuse(spectrumError(15001, fmt.Sprintf("File '%s' has an invalid version number or is not a Parquet file: %v", file, perr)))
		}
		fields := f.Schema().Fields()
		if len(fields) != len(targets) {
			return refuse(spectrumError(15007, fmt.Sprintf(
				"Unmatched number of columns between table and file. Table columns: %d, Data columns: %d, File name: %s",
				len(targets), len(fields), file)))
		}
		for k, fld := range fields {
			if targets[k].typ.fam == famSuper {
				// Redshift loads a Parquet column into SUPER as a scalar,
				// or with SERIALIZETOJSON as JSON; neither is emulated.
				return refuse(notEmulated("COPY into the SUPER column " + targets[k].name))
			}
			if !fld.Leaf() || fld.Repeated() {
				return refuse(notEmulated("nested or repeated Parquet column " + fld.Name()))
			}
			if !compatible(fld, targets[k].typ) {
				return refuse(spectrumError(15007, fmt.Sprintf(
					"File '%s' has an incompatible Parquet schema for column '%s.%s'. Column type: %s, Parquet schema:\n%s",
					file, file, targets[k].name, strings.ToUpper(targets[k].typ.redshiftName()), strings.TrimSpace(fld.String()))))
			}
		}
		line := 0
		for _, rg := range f.RowGroups() {
			rows := rg.Rows()
			buf := make([]parquet.Row, 64)
			for {
				n, rerr := rows.ReadRows(buf)
				for _, row := range buf[:n] {
					line++
					vals := make([]parquet.Value, len(targets))
					for _, v := range row {
						if c := v.Column(); c >= 0 && c < len(vals) {
							vals[c] = v
						}
					}
					for k, t := range targets {
						if k > 0 {
							in.buf = append(in.buf, '\t')
						}
						var le *loadError
						in.buf, le = appendValue(in.buf, vals[k], fields[k], t, cs.acceptInvChars)
						if le != nil {
							rows.Close()
							if le.backend != nil {
								return refuse(le.backend)
							}
							if err := s.recordLoadError(relid, startTime, file, line, t, le); err != nil {
								s.srv.log.Warn("rsemu: record load error", "err", err)
							}
							return refuse(le.clientError(table, file, line, t))
						}
					}
					total++
					if e, err := in.endRow(); err != nil || e != nil {
						rows.Close()
						if err != nil {
							return nil, nil, err
						}
						return refuse(pgError(e))
					}
				}
				if rerr == io.EOF {
					break
				}
				if rerr != nil {
					rows.Close()
					return refuse(spectrumError(15001, fmt.Sprintf("File '%s' could not be read: %v", file, rerr)))
				}
			}
			rows.Close()
		}
	}
	if e, err := in.finish(); err != nil || e != nil {
		return abort(pgError(e), err)
	}
	if own {
		if _, e, err := s.mustInternal("COMMIT"); err != nil || e != nil {
			return nil, pgError(e), err
		}
	}
	return &result{tag: fmt.Sprintf("COPY %d", total)}, nil, nil
}

// copyTargets resolves the COPY's table and columns with their Redshift
// types from the shadow catalog (or guessed from PostgreSQL's for tables
// the emulator did not create).
func (s *session) copyTargets(cs *copyStmt) (string, []target, int64, *Error, error) {
	lit := quoteLiteral(cs.table.text)
	r, e, err := s.mustInternal(`SELECT a.attname, a.attnotnull, format_type(a.atttypid, a.atttypmod),
       rc.family, rc.length, rc.precision, rc.scale, c.oid, n.nspname, c.relname
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN rsemu_catalog.columns rc ON rc.relid = a.attrelid AND rc.attnum = a.attnum
WHERE a.attrelid = to_regclass(` + lit + `) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`)
	if err != nil || e != nil {
		return "", nil, 0, pgError(e), err
	}
	if len(r.rows) == 0 {
		return "", nil, 0, &Error{Code: CodeUndefinedTable, Message: fmt.Sprintf("relation %q does not exist", cs.table.relation())}, nil
	}
	all := make([]target, 0, len(r.rows))
	for _, row := range r.rows {
		t := target{name: string(row[0]), notNull: string(row[1]) == "t"}
		if row[3] != nil {
			t.typ.fam = family(row[3])
			t.typ.length, _ = strconv.Atoi(string(row[4]))
			t.typ.precision, _ = strconv.Atoi(string(row[5]))
			t.typ.scale, _ = strconv.Atoi(string(row[6]))
		} else {
			typ, ok := typeFromPG(string(row[2]))
			if !ok {
				return "", nil, 0, notEmulated(fmt.Sprintf("COPY into column %q of PostgreSQL type %s", t.name, row[2])), nil
			}
			t.typ = typ
		}
		all = append(all, t)
	}
	relid, _ := strconv.ParseInt(string(r.rows[0][7]), 10, 64)
	table := quoteIdent(string(r.rows[0][8])) + "." + quoteIdent(string(r.rows[0][9]))
	if cs.columns == nil {
		return table, all, relid, nil, nil
	}
	out := make([]target, 0, len(cs.columns))
	for _, name := range cs.columns {
		found := false
		for _, t := range all {
			if t.name == name {
				out = append(out, t)
				found = true
				break
			}
		}
		if !found {
			return "", nil, 0, &Error{Code: CodeUndefinedColumn,
				Message: fmt.Sprintf("column %q of relation %q does not exist", name, cs.table.relation())}, nil
		}
	}
	return table, out, relid, nil, nil
}

// source is one object a COPY reads.
type source struct {
	bucket, key string
	length      int64  // content_length from a manifest; -1 without one
	body        []byte // already read (a manifest's entry), or nil
}

// copySources is what a COPY reads: every object under the key prefix, or
// the files its manifest lists.
func (s *Server) copySources(ctx context.Context, cs *copyStmt) ([]source, *Error) {
	if cs.manifest {
		return s.manifestSources(ctx, cs.bucket, cs.prefix)
	}
	keys, e := s.listPrefix(ctx, cs.bucket, cs.prefix)
	if e != nil {
		return nil, e
	}
	out := make([]source, len(keys))
	for i, k := range keys {
		out[i] = source{bucket: cs.bucket, key: k, length: -1}
	}
	return out, nil
}

// listPrefix lists every object whose key starts with prefix, as Redshift
// loads every match (so "data/part" also matches "data/part-2/x").
func (s *Server) listPrefix(ctx context.Context, bucket, prefix string) ([]string, *Error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.s3, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s3Error(err, bucket, prefix)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if strings.HasSuffix(key, "/") && aws.ToInt64(o.Size) == 0 {
				continue // folder marker
			}
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, &Error{Code: CodeInternal,
			Message: fmt.Sprintf("The specified S3 prefix '%s' does not exist", prefix),
			Detail:  "error: The specified S3 prefix '" + prefix + "' does not exist\ncode: 8001\ncontext: s3://" + bucket + "/" + prefix}
	}
	sort.Strings(keys)
	return keys, nil
}

func (s *Server) getObject(ctx context.Context, bucket, key string) ([]byte, *Error) {
	b, err := s.readObject(ctx, bucket, key)
	if err != nil {
		return nil, s3Error(err, bucket, key)
	}
	return b, nil
}

func (s *Server) readObject(ctx context.Context, bucket, key string) ([]byte, error) {
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func s3Error(err error, bucket, key string) *Error {
	var nsb *types.NoSuchBucket
	if errors.As(err, &nsb) || strings.Contains(err.Error(), "NoSuchBucket") {
		return &Error{Code: CodeInternal,
			Message: "S3ServiceException:The specified bucket does not exist,Status 404,Error NoSuchBucket,Rid ,CanRetry 1",
			Detail:  "error: S3ServiceException:The specified bucket does not exist\ncode: 8001\ncontext: s3://" + bucket + "/" + key}
	}
	return &Error{Code: CodeInternal, Message: "S3ServiceException:" + err.Error(),
		Detail: "error: S3ServiceException\ncode: 8001\ncontext: s3://" + bucket + "/" + key}
}

func spectrumError(code int, context string) *Error {
	return &Error{
		Code:    CodeInternal,
		Message: "Spectrum Scan Error",
		Detail: fmt.Sprintf("-----------------------------------------------\n"+
			"  error:  Spectrum Scan Error\n"+
			"  code:      %d\n"+
			"  context:   %s\n"+
			"  query:     0\n"+
			"  location:  dory_util.cpp:1509\n"+
			"  process:   worker_thread [pid=1]\n"+
			"  -----------------------------------------------", code, context),
	}
}

// clientError is the error COPY returns for a row-level failure: the
// reason as the message, the Redshift load-failure text and the usual
// detail block below it.
func (le *loadError) clientError(table, file string, line int, t target) *Error {
	return &Error{
		Code:    CodeInternal,
		Message: le.message,
		Detail: fmt.Sprintf("Load into table %s failed.  Check 'sys_load_error_detail' system table for details.\n"+
			"-----------------------------------------------\n"+
			"  error:  %s\n"+
			"  code:      %d\n"+
			"  context:   %s, line %d, column %s (%s %s)\n"+
			"  query:     0\n"+
			"  location:  load_parquet.cpp:1\n"+
			"  process:   query0_1 [pid=1]\n"+
			"  -----------------------------------------------",
			table, le.message, le.code, file, line, t.name, t.typ.loadTypeName(), t.typ.loadLength()),
	}
}

// recordLoadError writes the failure on a separate connection, so it stays
// visible after the COPY's transaction is rolled back, as in Redshift.
func (s *session) recordLoadError(relid int64, start time.Time, file string, line int, t target, le *loadError) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, s.bcfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	raw := le.raw
	if len(raw) > 1024 {
		raw = raw[:1024]
	}
	for len(raw) > 0 && !utf8.ValidString(raw) {
		raw = raw[:len(raw)-1]
	}
	raw = strings.ToValidUTF8(strings.ReplaceAll(raw, "\x00", ""), "?")
	sql := fmt.Sprintf(`INSERT INTO rsemu_catalog.load_errors
(user_id, query_id, transaction_id, session_id, database_name, table_id, start_time, file_name, line_number,
 column_name, column_type, column_length, position, error_code, error_message, raw_line, raw_field_value)
VALUES (100, nextval('rsemu_catalog.query_ids'), txid_current(), %d, %s, %d, %s, %s, %d, %s, %s, %s, 0, %d, %s, '', %s)`,
		s.pid, quoteLiteral(s.dbName), relid, quoteLiteral(start.Format("2006-01-02 15:04:05.999999")),
		quoteLiteral(file), line, quoteLiteral(t.name), quoteLiteral(t.typ.loadTypeName()),
		quoteLiteral(t.typ.loadLength()), le.code, quoteLiteral(le.message), quoteLiteral(raw))
	_, err = conn.Exec(ctx, sql).ReadAll()
	return err
}

// logical returns the field's logical type value, or nil.
func logical(n parquet.Node) format.LogicalTypeValue {
	if lt := n.Type().LogicalType(); lt != nil {
		return lt.Value
	}
	return nil
}

func isStringAnnotated(n parquet.Node) bool {
	switch logical(n).(type) {
	case *format.StringType, *format.EnumType, *format.JsonType:
		return true
	}
	if ct := n.Type().ConvertedType(); ct != nil {
		switch *ct {
		case deprecated.UTF8, deprecated.Enum, deprecated.Json:
			return true
		}
	}
	return false
}

// compatible says whether a Parquet column may load into a Redshift column
// type, following Redshift Spectrum's mapping.
func compatible(n parquet.Node, t colType) bool {
	kind := n.Type().Kind()
	lt := logical(n)
	switch t.fam {
	case famVarchar, famChar:
		return kind == parquet.ByteArray && (lt == nil || isStringAnnotated(n))
	case famVarbyte:
		return (kind == parquet.ByteArray || kind == parquet.FixedLenByteArray) && !isStringAnnotated(n) && lt == nil
	case famSmallint, famInteger, famBigint:
		_, isInt := lt.(*format.IntType)
		return (kind == parquet.Int32 || kind == parquet.Int64) && (lt == nil || isInt)
	case famNumeric:
		if _, ok := lt.(*format.DecimalType); ok {
			return true
		}
		_, isInt := lt.(*format.IntType)
		return (kind == parquet.Int32 || kind == parquet.Int64) && (lt == nil || isInt)
	case famReal, famDouble:
		return kind == parquet.Float || kind == parquet.Double
	case famBoolean:
		return kind == parquet.Boolean
	case famDate:
		_, ok := lt.(*format.DateType)
		return kind == parquet.Int32 && ok
	case famTimestamp, famTimestamptz:
		_, ok := lt.(*format.TimestampType)
		return kind == parquet.Int64 && ok || kind == parquet.Int96
	}
	return false
}

// appendValue appends one Parquet value to dst as a field of PostgreSQL's
// COPY text format for column t (copyin.go), or reports why Redshift would
// reject it. Each value's text is what PostgreSQL's input function for the
// column type reads to the same value an INSERT of a literal cast to it
// stored, so rows land exactly as they did when the emulator sent INSERTs.
func appendValue(dst []byte, v parquet.Value, n parquet.Node, t target, acceptInv string) ([]byte, *loadError) {
	if v.IsNull() {
		if t.notNull {
			return dst, &loadError{code: 1213, message: "Missing data for not-null field"}
		}
		return append(dst, `\N`...), nil
	}
	switch t.typ.fam {
	case famVarchar, famChar:
		b := v.ByteArray()
		if !utf8.Valid(b) {
			if acceptInv == "" {
				return dst, &loadError{code: 1220, raw: strings.ToValidUTF8(string(b), "?"),
					message: "String contains invalid or unsupported UTF8 codepoints. Bad UTF8 hex sequence: " + badUTF8(b) + " (error 3)"}
			}
			b = []byte(replaceInvalid(b, acceptInv))
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return dst, &loadError{code: 1216, message: "Invalid null byte - field longer than 1 byte", raw: string(b)}
		}
		if t.typ.fam == famChar {
			for i := 0; i < len(b); i++ {
				if b[i] >= 0x80 {
					return dst, &loadError{code: 1220, raw: string(b),
						message: "Multibyte character not supported for CHAR (Hint: try using VARCHAR). Invalid char: " + hex.EncodeToString(b[i:min(i+4, len(b))])}
				}
			}
		}
		if t.typ.length > 0 && len(b) > t.typ.length {
			return dst, &loadError{code: 1204, message: "String length exceeds DDL length", raw: string(b)}
		}
		return appendCopyText(dst, b), nil
	case famVarbyte:
		b := v.ByteArray()
		if t.typ.length > 0 && len(b) > t.typ.length {
			return dst, &loadError{code: 1204, message: "Varbyte length exceeds DDL length", raw: hex.EncodeToString(b[:min(len(b), 512)])}
		}
		// bytea's hex input, \x..., with its backslash escaped for COPY.
		dst = append(dst, `\\x`...)
		return hex.AppendEncode(dst, b), nil
	case famSmallint, famInteger, famBigint:
		var x int64
		if n.Type().Kind() == parquet.Int32 {
			x = int64(v.Int32())
		} else {
			x = v.Int64()
		}
		if it, ok := logical(n).(*format.IntType); ok && !it.IsSigned && n.Type().Kind() == parquet.Int64 && x < 0 {
			return dst, &loadError{code: 1204, message: fmt.Sprintf("Overflow, value %d out of range for type %s", uint64(x), t.typ.redshiftName()), raw: strconv.FormatUint(uint64(x), 10)}
		}
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		switch t.typ.fam {
		case famSmallint:
			lo, hi = math.MinInt16, math.MaxInt16
		case famInteger:
			lo, hi = math.MinInt32, math.MaxInt32
		}
		if x < lo || x > hi {
			return dst, &loadError{code: 1204, message: fmt.Sprintf("Overflow, value %d out of range for type %s", x, t.typ.redshiftName()), raw: strconv.FormatInt(x, 10)}
		}
		return strconv.AppendInt(dst, x, 10), nil
	case famNumeric:
		if dt, ok := logical(n).(*format.DecimalType); ok {
			return append(dst, decimalString(v, n, int(dt.Scale))...), nil
		}
		if n.Type().Kind() == parquet.Int32 {
			return strconv.AppendInt(dst, int64(v.Int32()), 10), nil
		}
		return strconv.AppendInt(dst, v.Int64(), 10), nil
	case famReal, famDouble:
		var f float64
		if n.Type().Kind() == parquet.Float {
			f = float64(v.Float())
		} else {
			f = v.Double()
		}
		switch {
		case math.IsNaN(f):
			return append(dst, "NaN"...), nil
		case math.IsInf(f, 1):
			return append(dst, "Infinity"...), nil
		case math.IsInf(f, -1):
			return append(dst, "-Infinity"...), nil
		}
		if t.typ.fam == famDouble {
			return strconv.AppendFloat(dst, f, 'g', -1, 64), nil
		}
		// A REAL column: the emulator once sent a float8 literal that
		// PostgreSQL's float8-to-float4 cast rounded (float32 conversion
		// rounds the same way), refusing what it cannot hold with these
		// errors. The float32's shortest text reads back to it exactly.
		r := float32(f)
		if math.IsInf(float64(r), 0) {
			return dst, &loadError{backend: &Error{Severity: "ERROR", Code: "22003", Message: "value out of range: overflow"}}
		}
		if r == 0 && f != 0 {
			return dst, &loadError{backend: &Error{Severity: "ERROR", Code: "22003", Message: "value out of range: underflow"}}
		}
		return strconv.AppendFloat(dst, float64(r), 'g', -1, 32), nil
	case famBoolean:
		return strconv.AppendBool(dst, v.Boolean()), nil
	case famDate:
		d := time.Unix(int64(v.Int32())*86400, 0).UTC()
		return d.AppendFormat(dst, "2006-01-02"), nil
	case famTimestamp, famTimestamptz:
		var ts time.Time
		if n.Type().Kind() == parquet.Int96 {
			i96 := v.Int96()
			nanos := int64(i96[1])<<32 | int64(i96[0])
			days := int64(i96[2]) - 2440588
			ts = time.Unix(days*86400, nanos).UTC()
		} else {
			tt := logical(n).(*format.TimestampType)
			x := v.Int64()
			switch tt.Unit.Value.(type) {
			case *format.MilliSeconds:
				ts = time.UnixMilli(x).UTC()
			case *format.NanoSeconds:
				ts = time.Unix(0, x).UTC()
			default:
				ts = time.UnixMicro(x).UTC()
			}
		}
		dst = ts.AppendFormat(dst, "2006-01-02 15:04:05.999999")
		if t.typ.fam == famTimestamptz {
			dst = append(dst, "+00"...)
		}
		return dst, nil
	}
	return dst, &loadError{code: 1200, message: "rsemu: unsupported column type " + string(t.typ.fam)}
}

func decimalString(v parquet.Value, n parquet.Node, scale int) string {
	var x big.Int
	switch n.Type().Kind() {
	case parquet.Int32:
		x.SetInt64(int64(v.Int32()))
	case parquet.Int64:
		x.SetInt64(v.Int64())
	default:
		b := v.ByteArray()
		x.SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 { // two's complement negative
			var m big.Int
			m.Lsh(big.NewInt(1), uint(8*len(b)))
			x.Sub(&x, &m)
		}
	}
	s := x.String()
	if scale <= 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= scale {
		s = "0" + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

func badUTF8(b []byte) string {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return hex.EncodeToString(b[i : i+1])
		}
		i += size
	}
	return ""
}

// replaceInvalid replaces each byte of an invalid UTF-8 sequence with the
// ACCEPTINVCHARS replacement character, as Redshift does.
func replaceInvalid(b []byte, repl string) string {
	var out strings.Builder
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			out.WriteString(repl)
			i++
			continue
		}
		out.Write(b[i : i+size])
		i += size
	}
	return out.String()
}
