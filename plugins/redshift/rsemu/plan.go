package rsemu

import (
	"sort"
	"strings"
)

// planKind says how the session handles one statement.
type planKind int

const (
	planPass              planKind = iota // send plan.sql (possibly rewritten) to PostgreSQL
	planCreateTable                       // CREATE TABLE with Redshift types
	planCopy                              // COPY ... FROM 's3://...' FORMAT AS PARQUET
	planTruncate                          // TRUNCATE, which commits first
	planSetCaseSensitive                  // SET enable_case_sensitive_identifier
	planShowCaseSensitive                 // SHOW enable_case_sensitive_identifier
)

// plan is the outcome of inspecting one statement.
type plan struct {
	kind   planKind
	sql    string // pass-through text, or the rewritten statement being emulated
	create *createTable
	copy   *copyStmt
	// value for planSetCaseSensitive; reset restores the configured default.
	caseSensitive bool
	reset         bool
}

func (p *plan) emulated() bool { return p.kind != planPass }

// systemTablePrefixes are Redshift system table and view families. Any name
// with one of these prefixes that the emulator does not provide is refused,
// so a test never silently reads an empty or missing PostgreSQL relation.
var systemTablePrefixes = []string{"stl_", "stv_", "svl_", "svv_", "sys_", "svcs_", "stcs_", "svcs_"}

// redshiftFunctions are Redshift functions PostgreSQL lacks or implements
// differently. Calling one fails loudly instead of with a confusing
// "function does not exist" or, worse, PostgreSQL semantics.
var redshiftFunctions = map[string]bool{
	"getdate": true, "nvl": true, "nvl2": true, "decode": true, "listagg": true, "median": true,
	"dateadd": true, "datediff": true, "date_cmp": true, "convert_timezone": true, "months_between": true,
	"add_months": true, "json_extract_array_element_text": true,
	"is_valid_json": true, "is_valid_json_array": true, "can_json_parse": true, "json_serialize": true,
	"from_hex": true, "to_varbyte": true, "from_varbyte": true, "pg_last_copy_count": true,
	"pg_last_copy_id": true, "pg_last_query_id": true, "pg_last_unload_count": true, "strtol": true,
	"len": true, "charindex": true, "ratio_to_report": true, "split_to_array": true,
	"object_transform": true, "hll": true, "hll_create_sketch": true, "hll_cardinality": true,
	"text_to_int_alt": true, "text_to_numeric_alt": true, "approximate": true,
}

// emulatedFunctions are Redshift functions the emulator provides in
// rsemu_catalog (see catalog.go); calls are rewritten to that schema.
var emulatedFunctions = map[string]bool{"json_parse": true}

// redshiftBareFunctions are called without parentheses.
var redshiftBareFunctions = map[string]bool{"sysdate": true}

type edit struct {
	start, end int
	repl       string
}

func applyEdits(sql string, edits []edit) string {
	if len(edits) == 0 {
		return sql
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var b strings.Builder
	pos := 0
	for _, e := range edits {
		if e.start < pos {
			continue
		}
		b.WriteString(sql[pos:e.start])
		b.WriteString(e.repl)
		pos = e.end
	}
	b.WriteString(sql[pos:])
	return b.String()
}

// rewrite applies the statement-independent rewrites and refusals:
// Redshift's case folding of quoted identifiers, the emulated system views,
// VARCHAR(MAX) in casts, and refusal of Redshift-only system tables and
// functions.
func rewrite(sql string, caseSensitive bool) (string, *Error) {
	toks := lex(sql)
	var edits []edit
	for i, t := range toks {
		prevDot := i > 0 && toks[i-1].val == "."
		nextParen := i+1 < len(toks) && toks[i+1].val == "("
		switch t.kind {
		case tokQIdent:
			if !caseSensitive && strings.ToLower(t.val) != t.val {
				edits = append(edits, edit{t.start, t.end, quoteIdent(strings.ToLower(t.val))})
			}
		case tokIdent:
			name := t.val
			switch {
			case emulatedViews[name] && !nextParen:
				if !prevDot {
					edits = append(edits, edit{t.start, t.end, "rsemu_catalog." + name})
				} else if i >= 2 && toks[i-2].kind == tokIdent && toks[i-2].val == "pg_catalog" {
					edits = append(edits, edit{toks[i-2].start, t.end, "rsemu_catalog." + name})
				}
			case !prevDot && hasSystemPrefix(name) && !emulatedViews[name] && !nextParen:
				return "", notEmulated("the Redshift system table " + name)
			case !prevDot && nextParen && emulatedFunctions[name]:
				edits = append(edits, edit{t.start, t.end, "rsemu_catalog." + name})
			case !prevDot && nextParen && redshiftFunctions[name]:
				return "", notEmulated("the Redshift function " + strings.ToUpper(name) + "()")
			case !prevDot && !nextParen && redshiftBareFunctions[name]:
				return "", notEmulated("the Redshift function " + strings.ToUpper(name))
			case name == "max" && i >= 2 && toks[i-1].val == "(" && i+1 < len(toks) && toks[i+1].val == ")" &&
				isCharTypeWord(toks, i-2):
				edits = append(edits, edit{t.start, t.end, "65535"})
			}
		}
	}
	return applyEdits(sql, edits), nil
}

func hasSystemPrefix(name string) bool {
	for _, p := range systemTablePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func isCharTypeWord(toks []token, i int) bool {
	switch toks[i].val {
	case "varchar", "nvarchar":
		return true
	case "varying":
		return i > 0 && (toks[i-1].val == "character" || toks[i-1].val == "char")
	}
	return false
}

// planStatement decides how to run one statement.
func planStatement(sql string, caseSensitive bool) (*plan, *Error) {
	text, err := rewrite(sql, caseSensitive)
	if err != nil {
		return nil, err
	}
	toks := lex(text)
	p := &plan{kind: planPass, sql: text}
	if len(toks) == 0 || toks[0].kind != tokIdent {
		return p, nil
	}
	word := func(i int) string {
		if i < len(toks) && toks[i].kind == tokIdent {
			return toks[i].val
		}
		return ""
	}
	hasWord := func(words ...string) bool {
		for i := range toks {
			if matchWords(toks, i, words) {
				return true
			}
		}
		return false
	}
	switch word(0) {
	case "create":
		i := 1
		if word(i) == "local" {
			i++
		}
		if word(i) == "temp" || word(i) == "temporary" {
			i++
		}
		switch word(i) {
		case "table":
			ct, err := parseCreateTable(text, toks)
			if err != nil {
				return nil, err
			}
			p.kind, p.create = planCreateTable, ct
		case "external":
			return nil, notEmulated("CREATE EXTERNAL " + strings.ToUpper(word(i+1)))
		case "library", "datashare", "model":
			return nil, notEmulated("CREATE " + strings.ToUpper(word(i)))
		case "materialized":
			if hasWord("auto", "refresh") || hasWord("backup") || hasWord("distkey") || hasWord("sortkey") || hasWord("diststyle") {
				return nil, notEmulated("Redshift options of CREATE MATERIALIZED VIEW")
			}
		}
	case "copy":
		cs, err := parseCopy(text, toks)
		if err != nil {
			return nil, err
		}
		p.kind, p.copy = planCopy, cs
	case "truncate":
		// Redshift: TRUNCATE [TABLE] name -- one table, no options.
		i := 1
		if word(i) == "table" {
			i++
		}
		_, next, err := parseQualifiedName(toks, i)
		if err != nil {
			return nil, err
		}
		if next != len(toks) {
			return nil, notEmulated("TRUNCATE of several tables or with options (Redshift takes exactly one table)")
		}
		p.kind = planTruncate
	case "unload":
		return nil, notEmulated("UNLOAD")
	case "alter":
		switch word(1) {
		case "table":
			if hasWord("append") {
				return nil, notEmulated("ALTER TABLE APPEND")
			}
			if hasWord("add") || hasWord("alter") {
				return nil, notEmulated("ALTER TABLE ADD/ALTER (Redshift column types are only emulated in CREATE TABLE)")
			}
		case "datashare":
			return nil, notEmulated("ALTER DATASHARE")
		}
	case "savepoint", "release":
		return nil, notEmulated(strings.ToUpper(word(0)) + " (Redshift has no savepoints)")
	case "rollback":
		if hasWord("to") {
			return nil, notEmulated("ROLLBACK TO SAVEPOINT (Redshift has no savepoints)")
		}
	case "listen", "notify", "unlisten":
		return nil, notEmulated(strings.ToUpper(word(0)) + " (Redshift has no LISTEN/NOTIFY)")
	case "show":
		switch word(1) {
		case "enable_case_sensitive_identifier":
			p.kind = planShowCaseSensitive
		case "tables", "columns", "databases", "schemas", "grants", "model", "models", "datashares",
			"external", "view", "procedure", "table", "functions":
			return nil, notEmulated("SHOW " + strings.ToUpper(word(1)))
		}
	case "set", "reset":
		i := 1
		if word(i) == "session" || word(i) == "local" {
			i++
		}
		if word(i) == "enable_case_sensitive_identifier" {
			p.kind = planSetCaseSensitive
			p.reset = word(0) == "reset"
			if !p.reset {
				i++
				if i < len(toks) && (toks[i].val == "to" || toks[i].val == "=") {
					i++
				}
				if i >= len(toks) {
					return nil, syntaxError("")
				}
				switch strings.ToLower(toks[i].val) {
				case "true", "on", "1", "yes":
					p.caseSensitive = true
				case "false", "off", "0", "no":
					p.caseSensitive = false
				case "default":
					p.reset = true
				default:
					return nil, &Error{Code: CodeInvalidParamValue, Message: "parameter \"enable_case_sensitive_identifier\" requires a Boolean value"}
				}
			}
		}
	case "insert", "update", "delete", "with", "merge":
		if hasWord("on", "conflict") {
			return nil, notEmulated("INSERT ... ON CONFLICT (Redshift has no upsert clause)")
		}
		if hasWord("returning") {
			return nil, notEmulated("RETURNING (Redshift does not return rows from DML)")
		}
	case "lock":
		if hasWord("mode") || hasWord("nowait") {
			return nil, notEmulated("LOCK with a lock mode or NOWAIT (Redshift's LOCK takes only table names)")
		}
	case "vacuum":
		for _, w := range []string{"sort", "delete", "reindex", "recluster", "boost", "to"} {
			if hasWord(w) {
				return nil, notEmulated("VACUUM " + strings.ToUpper(w))
			}
		}
	case "analyze":
		if word(1) == "compression" {
			return nil, notEmulated("ANALYZE COMPRESSION")
		}
	case "cancel":
		return nil, notEmulated("CANCEL")
	}
	return p, nil
}

// qualifiedName is a possibly schema-qualified relation name.
type qualifiedName struct {
	parts []string // unescaped, already case-folded as the client's session would
	text  string   // SQL text: each part quoted
}

// parseQualifiedName reads name[.name[.name]] at toks[i].
func parseQualifiedName(toks []token, i int) (qualifiedName, int, *Error) {
	var q qualifiedName
	for {
		if i >= len(toks) || (toks[i].kind != tokIdent && toks[i].kind != tokQIdent) {
			return q, i, syntaxError(tokText(toks, i))
		}
		q.parts = append(q.parts, toks[i].val)
		i++
		if i < len(toks) && toks[i].val == "." {
			i++
			continue
		}
		break
	}
	if len(q.parts) > 3 {
		return q, i, syntaxError(".")
	}
	quoted := make([]string, len(q.parts))
	for k, p := range q.parts {
		quoted[k] = quoteIdent(p)
	}
	q.text = strings.Join(quoted, ".")
	return q, i, nil
}

// relation is the last part of the name.
func (q qualifiedName) relation() string { return q.parts[len(q.parts)-1] }
