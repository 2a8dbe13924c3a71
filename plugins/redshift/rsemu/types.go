package rsemu

import (
	"fmt"
	"strconv"
	"strings"
)

// family is a Redshift column type family.
type family string

const (
	famSmallint    family = "smallint"
	famInteger     family = "integer"
	famBigint      family = "bigint"
	famNumeric     family = "numeric"
	famReal        family = "real"
	famDouble      family = "double"
	famBoolean     family = "boolean"
	famChar        family = "char"
	famVarchar     family = "varchar"
	famVarbyte     family = "varbyte"
	famDate        family = "date"
	famTimestamp   family = "timestamp"
	famTimestamptz family = "timestamptz"
	famTime        family = "time"
	famTimetz      family = "timetz"
	famSuper       family = "super"
)

// Redshift type limits.
const (
	VarcharDefault = 256      // VARCHAR, TEXT and NVARCHAR without a length
	VarcharMax     = 65535    // VARCHAR(MAX)
	CharDefault    = 1        // CHAR without a length
	BpcharDefault  = 256      // BPCHAR
	CharMax        = 4096     // CHAR(MAX)
	VarbyteDefault = 64000    // VARBYTE without a length
	VarbyteMax     = 16777216 // VARBYTE(MAX) is not accepted, but this is the ceiling
	SuperMax       = 1000000  // bytes of JSON text JSON_PARSE takes outside COPY ("larger than 1MB can only be ingested from" files)
	SuperStringMax = 65535    // bytes of one string inside a SUPER value, by default
	SuperDepthMax  = 1000     // nesting of arrays and objects in a SUPER value
	NumericDefault = 18       // DECIMAL without precision is DECIMAL(18,0)
	NumericMax     = 38
)

// colType is a Redshift column type. length is in bytes for the character
// and binary families (0: no limit, only for tables the emulator did not
// create).
type colType struct {
	fam       family
	length    int
	precision int
	scale     int
}

// typeSpec is one row of the type table: the spellings that name a family
// and how its modifier is read.
type typeSpec struct {
	names   []string // space-separated keyword sequences
	fam     family
	modKind modKind
	defLen  int // default length when no modifier is given
	maxLen  int
	// encoding Redshift picks under ENCODE AUTO for a new table.
	autoEncoding string
}

type modKind int

const (
	modNone      modKind = iota
	modLength            // (n) or (MAX)
	modPrecision         // (p[,s])
	modTimePrec          // optional (p) that Redshift does not accept; we refuse it
)

// typeTable lists every Redshift type the emulator accepts in CREATE TABLE.
// Longer spellings come first so "double precision" wins over "double".
var typeTable = []typeSpec{
	{names: []string{"character varying", "char varying", "varchar", "nvarchar"}, fam: famVarchar, modKind: modLength, defLen: VarcharDefault, maxLen: VarcharMax, autoEncoding: "lzo"},
	{names: []string{"text"}, fam: famVarchar, modKind: modNone, defLen: VarcharDefault, maxLen: VarcharMax, autoEncoding: "lzo"},
	{names: []string{"character", "char", "nchar"}, fam: famChar, modKind: modLength, defLen: CharDefault, maxLen: CharMax, autoEncoding: "lzo"},
	{names: []string{"bpchar"}, fam: famChar, modKind: modNone, defLen: BpcharDefault, maxLen: CharMax, autoEncoding: "lzo"},
	{names: []string{"binary varying", "varbyte", "varbinary"}, fam: famVarbyte, modKind: modLength, defLen: VarbyteDefault, maxLen: VarbyteMax, autoEncoding: "lzo"},
	{names: []string{"smallint", "int2"}, fam: famSmallint, autoEncoding: "az64"},
	{names: []string{"integer", "int", "int4"}, fam: famInteger, autoEncoding: "az64"},
	{names: []string{"bigint", "int8"}, fam: famBigint, autoEncoding: "az64"},
	{names: []string{"decimal", "numeric"}, fam: famNumeric, modKind: modPrecision, autoEncoding: "az64"},
	{names: []string{"real", "float4"}, fam: famReal, autoEncoding: "none"},
	{names: []string{"double precision", "float8", "float"}, fam: famDouble, autoEncoding: "none"},
	{names: []string{"boolean", "bool"}, fam: famBoolean, autoEncoding: "none"},
	{names: []string{"date"}, fam: famDate, autoEncoding: "az64"},
	{names: []string{"timestamp with time zone", "timestamptz"}, fam: famTimestamptz, modKind: modTimePrec, autoEncoding: "az64"},
	{names: []string{"timestamp without time zone", "timestamp"}, fam: famTimestamp, modKind: modTimePrec, autoEncoding: "az64"},
	{names: []string{"time with time zone", "timetz"}, fam: famTimetz, modKind: modTimePrec, autoEncoding: "az64"},
	{names: []string{"time without time zone", "time"}, fam: famTime, modKind: modTimePrec, autoEncoding: "az64"},
	// SUPER is stored as jsonb; values get in through JSON_PARSE, which
	// the emulator runs with Redshift's checks (rsemu_catalog.json_parse).
	{names: []string{"super"}, fam: famSuper, autoEncoding: "zstd"},
}

// unsupportedTypes are Redshift types the emulator refuses loudly rather than
// approximating.
var unsupportedTypes = map[string]bool{
	"geometry": true, "geography": true, "hllsketch": true, "interval": true,
}

func specFor(f family) *typeSpec {
	for i := range typeTable {
		if typeTable[i].fam == f {
			return &typeTable[i]
		}
	}
	return nil
}

// parseType reads a Redshift type from toks[i:]. It returns the type and the
// index of the first token after it.
func parseType(toks []token, i int) (colType, int, *Error) {
	if i >= len(toks) || toks[i].kind != tokIdent {
		return colType{}, i, syntaxError(tokText(toks, i))
	}
	var spec *typeSpec
	words := 0
	for k := range typeTable {
		for _, name := range typeTable[k].names {
			parts := strings.Fields(name)
			if matchWords(toks, i, parts) && len(parts) > words {
				spec, words = &typeTable[k], len(parts)
			}
		}
	}
	if spec == nil {
		name := toks[i].val
		if unsupportedTypes[name] {
			return colType{}, i, notEmulated("the " + strings.ToUpper(name) + " type")
		}
		return colType{}, i, &Error{Code: "42704", Message: fmt.Sprintf("type %q does not exist", name),
			Hint: "rsemu accepts the Redshift types listed in plugins/redshift/rsemu/README.md"}
	}
	t := colType{fam: spec.fam, length: spec.defLen}
	if spec.fam == famNumeric {
		t.precision, t.scale, t.length = NumericDefault, 0, 0
	}
	j := i + words
	if j < len(toks) && toks[j].val == "(" {
		args, next, err := parseTypeArgs(toks, j)
		if err != nil {
			return colType{}, i, err
		}
		j = next
		switch spec.modKind {
		case modNone:
			return colType{}, i, syntaxError("(")
		case modTimePrec:
			return colType{}, i, notEmulated("a precision on " + strings.ToUpper(spec.names[0]))
		case modLength:
			if len(args) != 1 {
				return colType{}, i, syntaxError(",")
			}
			if args[0] == "max" {
				t.length = spec.maxLen
				if spec.fam == famVarbyte {
					return colType{}, i, syntaxError("max")
				}
			} else {
				n, err := strconv.Atoi(args[0])
				if err != nil {
					return colType{}, i, syntaxError(args[0])
				}
				if n < 1 || n > spec.maxLen {
					return colType{}, i, &Error{Code: CodeInvalidParamValue,
						Message: fmt.Sprintf("length for type %s cannot exceed %d", pgLengthTypeName(spec.fam), spec.maxLen)}
				}
				t.length = n
			}
		case modPrecision:
			if len(args) < 1 || len(args) > 2 {
				return colType{}, i, syntaxError(",")
			}
			p, err := strconv.Atoi(args[0])
			if err != nil {
				return colType{}, i, syntaxError(args[0])
			}
			s := 0
			if len(args) == 2 {
				if s, err = strconv.Atoi(args[1]); err != nil {
					return colType{}, i, syntaxError(args[1])
				}
			}
			if p < 1 || p > NumericMax || s < 0 || s > p {
				return colType{}, i, &Error{Code: CodeInvalidParamValue,
					Message: fmt.Sprintf("NUMERIC precision %d must be between 1 and %d", p, NumericMax)}
			}
			t.precision, t.scale = p, s
		}
	}
	return t, j, nil
}

func pgLengthTypeName(f family) string {
	switch f {
	case famChar:
		return "bpchar"
	case famVarbyte:
		return "varbyte"
	}
	return "varchar"
}

func matchWords(toks []token, i int, words []string) bool {
	if i+len(words) > len(toks) {
		return false
	}
	for k, w := range words {
		if toks[i+k].kind != tokIdent || toks[i+k].val != w {
			return false
		}
	}
	return true
}

// parseTypeArgs reads "(a[, b])" starting at the "(" at i.
func parseTypeArgs(toks []token, i int) ([]string, int, *Error) {
	var args []string
	j := i + 1
	for j < len(toks) {
		t := toks[j]
		switch {
		case t.kind == tokNumber || t.kind == tokIdent && t.val == "max":
			args = append(args, t.val)
		default:
			return nil, j, syntaxError(t.val)
		}
		j++
		if j >= len(toks) {
			break
		}
		if toks[j].val == ")" {
			return args, j + 1, nil
		}
		if toks[j].val != "," {
			return nil, j, syntaxError(toks[j].val)
		}
		j++
	}
	return nil, j, syntaxError("")
}

func tokText(toks []token, i int) string {
	if i >= len(toks) {
		return ""
	}
	return toks[i].val
}

// redshiftName is how pg_table_def shows the type.
func (t colType) redshiftName() string {
	switch t.fam {
	case famSmallint:
		return "smallint"
	case famInteger:
		return "integer"
	case famBigint:
		return "bigint"
	case famNumeric:
		return fmt.Sprintf("numeric(%d,%d)", t.precision, t.scale)
	case famReal:
		return "real"
	case famDouble:
		return "double precision"
	case famBoolean:
		return "boolean"
	case famChar:
		return fmt.Sprintf("character(%d)", t.length)
	case famVarchar:
		return fmt.Sprintf("character varying(%d)", t.length)
	case famVarbyte:
		return fmt.Sprintf("varbyte(%d)", t.length)
	case famDate:
		return "date"
	case famTimestamp:
		return "timestamp without time zone"
	case famTimestamptz:
		return "timestamp with time zone"
	case famTime:
		return "time without time zone"
	case famTimetz:
		return "time with time zone"
	case famSuper:
		return "super"
	}
	return string(t.fam)
}

// pgType is the PostgreSQL type that stores the column. Character lengths
// are enforced in bytes by the check from checkExpr; PostgreSQL's own
// character limit can never fire first because a string has at least as
// many bytes as characters.
func (t colType) pgType() string {
	switch t.fam {
	case famNumeric:
		return fmt.Sprintf("numeric(%d,%d)", t.precision, t.scale)
	case famChar:
		return fmt.Sprintf("character(%d)", t.length)
	case famVarchar:
		return fmt.Sprintf("character varying(%d)", t.length)
	case famVarbyte:
		return "bytea"
	case famSuper:
		return "jsonb"
	}
	return t.redshiftName()
}

// checkExpr is the CHECK constraint enforcing Redshift's byte semantics, or
// "" when PostgreSQL's own type already behaves like Redshift's.
func (t colType) checkExpr(col string) string {
	switch t.fam {
	case famVarchar:
		return fmt.Sprintf("rsemu_catalog.varchar_fits(%s, %d)", col, t.length)
	case famChar:
		return fmt.Sprintf("rsemu_catalog.char_fits(%s, %d)", col, t.length)
	case famVarbyte:
		return fmt.Sprintf("rsemu_catalog.varbyte_fits(%s, %d)", col, t.length)
	}
	return ""
}

// typeFromPG guesses the Redshift type of a column the emulator did not
// create, from format_type output. Character types get no byte limit.
func typeFromPG(pg string) (colType, bool) {
	base, mod, _ := strings.Cut(pg, "(")
	mod = strings.TrimSuffix(mod, ")")
	switch base {
	case "smallint":
		return colType{fam: famSmallint}, true
	case "integer":
		return colType{fam: famInteger}, true
	case "bigint":
		return colType{fam: famBigint}, true
	case "numeric":
		t := colType{fam: famNumeric, precision: NumericMax, scale: 0}
		if p, s, ok := strings.Cut(mod, ","); ok {
			t.precision, _ = strconv.Atoi(p)
			t.scale, _ = strconv.Atoi(s)
		}
		return t, true
	case "real":
		return colType{fam: famReal}, true
	case "double precision":
		return colType{fam: famDouble}, true
	case "boolean":
		return colType{fam: famBoolean}, true
	case "character varying", "text":
		n, _ := strconv.Atoi(mod)
		return colType{fam: famVarchar, length: n}, true
	case "character":
		n, _ := strconv.Atoi(mod)
		return colType{fam: famChar, length: n}, true
	case "bytea":
		return colType{fam: famVarbyte}, true
	case "jsonb":
		return colType{fam: famSuper}, true
	case "date":
		return colType{fam: famDate}, true
	case "timestamp without time zone":
		return colType{fam: famTimestamp}, true
	case "timestamp with time zone":
		return colType{fam: famTimestamptz}, true
	case "time without time zone":
		return colType{fam: famTime}, true
	case "time with time zone":
		return colType{fam: famTimetz}, true
	}
	return colType{}, false
}

// loadTypeName and loadLength are what sys_load_error_detail shows in
// column_type and column_length.
func (t colType) loadTypeName() string {
	switch t.fam {
	case famVarchar:
		return "varchar"
	case famChar:
		return "char"
	case famVarbyte:
		return "varbyte"
	case famSmallint:
		return "int2"
	case famInteger:
		return "int4"
	case famBigint:
		return "int8"
	case famReal:
		return "float4"
	case famDouble:
		return "float8"
	case famBoolean:
		return "bool"
	case famTimestamptz:
		return "timestamptz"
	}
	return string(t.fam)
}

func (t colType) loadLength() string {
	switch t.fam {
	case famVarchar, famChar, famVarbyte:
		if t.length > 0 {
			return strconv.Itoa(t.length)
		}
	}
	return ""
}
