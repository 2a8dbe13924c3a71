package rsemu

import (
	"fmt"
	"strings"
)

// createTable is a parsed Redshift CREATE TABLE.
type createTable struct {
	temp        bool
	ifNotExists bool
	name        qualifiedName
	columns     []columnDef
}

type columnDef struct {
	name        string
	typ         colType
	notNull     bool
	defaultExpr string
	encoding    string // as pg_table_def shows it
	distkey     bool
	sortkey     int
}

// encodings Redshift accepts in ENCODE; pg_table_def shows raw as none.
var encodings = map[string]bool{
	"raw": true, "az64": true, "bytedict": true, "delta": true, "delta32k": true, "lzo": true,
	"mostly8": true, "mostly16": true, "mostly32": true, "runlength": true, "text255": true,
	"text32k": true, "zstd": true,
}

// columnAttrWords start a column attribute and so end a DEFAULT expression.
var columnAttrWords = map[string]bool{
	"not": true, "null": true, "encode": true, "distkey": true, "sortkey": true, "unique": true,
	"primary": true, "references": true, "collate": true, "identity": true, "generated": true,
	"default": true, "constraint": true,
}

// parseCreateTable parses Redshift's CREATE TABLE. Constraints Redshift
// accepts but does not enforce (PRIMARY KEY, UNIQUE, REFERENCES) are parsed
// and dropped, so PostgreSQL does not enforce them either.
func parseCreateTable(text string, toks []token) (*createTable, *Error) {
	ct := &createTable{}
	i := 1
	if tokText(toks, i) == "local" {
		i++
	}
	if w := tokText(toks, i); w == "temp" || w == "temporary" {
		ct.temp = true
		i++
	}
	i++ // table
	if matchWords(toks, i, []string{"if", "not", "exists"}) {
		ct.ifNotExists = true
		i += 3
	}
	name, i, err := parseQualifiedName(toks, i)
	if err != nil {
		return nil, err
	}
	ct.name = name
	if tokText(toks, i) == "as" {
		return nil, notEmulated("CREATE TABLE AS")
	}
	if tokText(toks, i) != "(" {
		return nil, syntaxError(tokText(toks, i))
	}
	i++
	var distCol string
	var sortCols []string
	colSortkeys := 0
	for {
		if i >= len(toks) {
			return nil, syntaxError("")
		}
		switch toks[i].kind {
		case tokIdent:
			switch toks[i].val {
			case "constraint":
				i += 2 // CONSTRAINT name, then the constraint itself
				fallthrough
			case "primary", "unique", "foreign", "check", "like":
				if i >= len(toks) {
					return nil, syntaxError("")
				}
				switch toks[i].val {
				case "check":
					return nil, notEmulated("CHECK constraints (Redshift has none)")
				case "like":
					return nil, notEmulated("CREATE TABLE ... LIKE")
				}
				// Informational table constraint: skip to the end of the element.
				i = skipElement(toks, i)
			default:
				col, next, err := parseColumn(text, toks, i)
				if err != nil {
					return nil, err
				}
				if col.sortkey != 0 {
					colSortkeys++
					col.sortkey = colSortkeys
				}
				ct.columns = append(ct.columns, col)
				i = next
			}
		case tokQIdent:
			col, next, err := parseColumn(text, toks, i)
			if err != nil {
				return nil, err
			}
			if col.sortkey != 0 {
				colSortkeys++
				col.sortkey = colSortkeys
			}
			ct.columns = append(ct.columns, col)
			i = next
		default:
			return nil, syntaxError(toks[i].val)
		}
		if i >= len(toks) {
			return nil, syntaxError("")
		}
		if toks[i].val == "," {
			i++
			continue
		}
		if toks[i].val == ")" {
			i++
			break
		}
		return nil, syntaxError(toks[i].val)
	}
	if len(ct.columns) == 0 {
		return nil, &Error{Code: CodeSyntax, Message: "Table must have at least one column"}
	}
	// Table attributes.
	for i < len(toks) {
		switch tokText(toks, i) {
		case "diststyle":
			switch tokText(toks, i+1) {
			case "auto", "even", "key", "all":
			default:
				return nil, syntaxError(tokText(toks, i+1))
			}
			i += 2
		case "distkey":
			cols, next, err := parseNameList(toks, i+1)
			if err != nil {
				return nil, err
			}
			if len(cols) != 1 {
				return nil, &Error{Code: CodeSyntax, Message: "DISTKEY takes exactly one column"}
			}
			distCol, i = cols[0], next
		case "compound":
			if tokText(toks, i+1) != "sortkey" {
				return nil, syntaxError(tokText(toks, i+1))
			}
			i++
			fallthrough
		case "sortkey":
			if tokText(toks, i+1) == "auto" {
				i += 2
				continue
			}
			cols, next, err := parseNameList(toks, i+1)
			if err != nil {
				return nil, err
			}
			sortCols, i = cols, next
		case "interleaved":
			return nil, notEmulated("INTERLEAVED SORTKEY")
		case "encode":
			if tokText(toks, i+1) != "auto" {
				return nil, syntaxError(tokText(toks, i+1))
			}
			i += 2
		case "backup":
			if w := tokText(toks, i+1); w != "yes" && w != "no" {
				return nil, syntaxError(w)
			}
			i += 2
		case "partition", "inherits", "with", "tablespace", "using", "on", "without":
			return nil, notEmulated("PostgreSQL table option " + strings.ToUpper(tokText(toks, i)) + " in CREATE TABLE")
		default:
			return nil, syntaxError(tokText(toks, i))
		}
	}
	if distCol != "" {
		c := ct.column(distCol)
		if c == nil {
			return nil, &Error{Code: CodeUndefinedColumn, Message: fmt.Sprintf("column %q named in key does not exist", distCol)}
		}
		for k := range ct.columns {
			if ct.columns[k].distkey && &ct.columns[k] != c {
				return nil, &Error{Code: CodeSyntax, Message: "Only one DISTKEY allowed"}
			}
		}
		c.distkey = true
	}
	if len(sortCols) > 0 {
		if colSortkeys > 0 {
			return nil, &Error{Code: CodeSyntax, Message: "SORTKEY given both as a column attribute and as a table attribute"}
		}
		for n, name := range sortCols {
			c := ct.column(name)
			if c == nil {
				return nil, &Error{Code: CodeUndefinedColumn, Message: fmt.Sprintf("column %q named in key does not exist", name)}
			}
			c.sortkey = n + 1
		}
	}
	for k := range ct.columns {
		c := &ct.columns[k]
		if c.encoding == "" {
			if c.sortkey == 1 {
				c.encoding = "none"
			} else {
				c.encoding = specFor(c.typ.fam).autoEncoding
			}
		}
	}
	return ct, nil
}

func (ct *createTable) column(name string) *columnDef {
	for k := range ct.columns {
		if ct.columns[k].name == name {
			return &ct.columns[k]
		}
	}
	return nil
}

// parseColumn reads "name type attrs..." up to the ',' or ')' that ends it.
func parseColumn(text string, toks []token, i int) (columnDef, int, *Error) {
	col := columnDef{name: toks[i].val}
	typ, i, err := parseType(toks, i+1)
	if err != nil {
		return col, i, err
	}
	col.typ = typ
	for i < len(toks) && toks[i].val != "," && toks[i].val != ")" {
		if toks[i].kind != tokIdent {
			return col, i, syntaxError(toks[i].val)
		}
		switch toks[i].val {
		case "not":
			if tokText(toks, i+1) != "null" {
				return col, i, syntaxError(tokText(toks, i+1))
			}
			col.notNull = true
			i += 2
		case "null":
			i++
		case "default":
			start := i + 1
			j := start
			depth := 0
			for j < len(toks) {
				v := toks[j].val
				if v == "(" {
					depth++
				} else if v == ")" {
					if depth == 0 {
						break
					}
					depth--
				} else if depth == 0 && (v == "," || toks[j].kind == tokIdent && columnAttrWords[v] && v != "null") {
					break
				}
				j++
			}
			if j == start {
				return col, i, syntaxError(tokText(toks, j))
			}
			col.defaultExpr = text[toks[start].start:toks[j-1].end]
			i = j
		case "encode":
			enc := tokText(toks, i+1)
			if !encodings[enc] {
				return col, i, &Error{Code: CodeSyntax, Message: fmt.Sprintf("invalid encoding type specified for column %q", col.name)}
			}
			if enc == "raw" {
				enc = "none"
			}
			col.encoding = enc
			i += 2
		case "distkey":
			col.distkey = true
			i++
		case "sortkey":
			col.sortkey = 1
			i++
		case "unique":
			i++
		case "primary":
			if tokText(toks, i+1) != "key" {
				return col, i, syntaxError(tokText(toks, i+1))
			}
			i += 2
		case "references":
			_, next, err := parseQualifiedName(toks, i+1)
			if err != nil {
				return col, i, err
			}
			i = next
			if tokText(toks, i) == "(" {
				_, i, err = parseNameList(toks, i)
				if err != nil {
					return col, i, err
				}
			}
		case "collate":
			switch tokText(toks, i+1) {
			case "case_sensitive":
			case "case_insensitive":
				return col, i, notEmulated("COLLATE CASE_INSENSITIVE")
			default:
				return col, i, syntaxError(tokText(toks, i+1))
			}
			i += 2
		case "constraint":
			i += 2
		case "identity", "generated":
			return col, i, notEmulated("IDENTITY columns")
		case "check":
			return col, i, notEmulated("CHECK constraints (Redshift has none)")
		default:
			return col, i, syntaxError(toks[i].val)
		}
	}
	return col, i, nil
}

// parseNameList reads "(a, b, ...)" at toks[i].
func parseNameList(toks []token, i int) ([]string, int, *Error) {
	if tokText(toks, i) != "(" {
		return nil, i, syntaxError(tokText(toks, i))
	}
	i++
	var names []string
	for {
		if i >= len(toks) || (toks[i].kind != tokIdent && toks[i].kind != tokQIdent) {
			return nil, i, syntaxError(tokText(toks, i))
		}
		names = append(names, toks[i].val)
		i++
		switch tokText(toks, i) {
		case ",":
			i++
		case ")":
			return names, i + 1, nil
		default:
			return nil, i, syntaxError(tokText(toks, i))
		}
	}
}

// skipElement skips to the depth-0 ',' or ')' that ends a table element.
func skipElement(toks []token, i int) int {
	depth := 0
	for ; i < len(toks); i++ {
		switch toks[i].val {
		case "(":
			depth++
		case ")":
			if depth == 0 {
				return i
			}
			depth--
		case ",":
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// pgSQL is the PostgreSQL CREATE TABLE that stores the table.
func (ct *createTable) pgSQL() string {
	var b strings.Builder
	b.WriteString("CREATE ")
	if ct.temp {
		b.WriteString("TEMPORARY ")
	}
	b.WriteString("TABLE ")
	if ct.ifNotExists {
		b.WriteString("IF NOT EXISTS ")
	}
	b.WriteString(ct.name.text)
	b.WriteString(" (")
	for k, c := range ct.columns {
		if k > 0 {
			b.WriteString(",")
		}
		col := quoteIdent(c.name)
		b.WriteString("\n  ")
		b.WriteString(col)
		b.WriteString(" ")
		b.WriteString(c.typ.pgType())
		if c.defaultExpr != "" {
			b.WriteString(" DEFAULT ")
			b.WriteString(c.defaultExpr)
		}
		if c.notNull {
			b.WriteString(" NOT NULL")
		}
		if chk := c.typ.checkExpr(col); chk != "" {
			b.WriteString(" CHECK (")
			b.WriteString(chk)
			b.WriteString(")")
		}
	}
	b.WriteString("\n)")
	return b.String()
}

// catalogSQL records the declared types in rsemu_catalog.columns for the
// table whose oid is relid.
func (ct *createTable) catalogSQL(relid string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "DELETE FROM rsemu_catalog.columns WHERE relid = %s;\n", relid)
	b.WriteString("INSERT INTO rsemu_catalog.columns (relid, attnum, family, length, precision, scale, rs_type, encoding, distkey, sortkey) VALUES")
	for k, c := range ct.columns {
		if k > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  (%s, %d, %s, %d, %d, %d, %s, %s, %t, %d)", relid, k+1,
			quoteLiteral(string(c.typ.fam)), c.typ.length, c.typ.precision, c.typ.scale,
			quoteLiteral(c.typ.redshiftName()), quoteLiteral(c.encoding), c.distkey, c.sortkey)
	}
	return b.String()
}
