package rsemu

import (
	"strings"
)

// tokKind classifies a lexical token of PostgreSQL/Redshift SQL.
type tokKind int

const (
	tokIdent  tokKind = iota // unquoted identifier or keyword; val is lower-cased
	tokQIdent                // "quoted identifier"; val is the unescaped name
	tokString                // string literal of any flavour; val is the decoded text for '...' and E'...'
	tokNumber                // numeric literal
	tokParam                 // $1
	tokPunct                 // ( ) , ; . [ ] and operator runs such as :: or <=
)

// token is one lexical token. start and end are byte offsets into the
// statement, so rewrites can splice the original text.
type token struct {
	kind       tokKind
	start, end int
	val        string
}

// lex splits sql into tokens, skipping whitespace and comments. It never
// fails: an unterminated literal or comment runs to the end of the input,
// and PostgreSQL reports the error when the text reaches it.
func lex(sql string) []token {
	var toks []token
	i, n := 0, len(sql)
	for i < n {
		c := sql[i]
		switch {
		case isSpace(c):
			i++
		case c == '-' && i+1 < n && sql[i+1] == '-':
			for i < n && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && sql[i+1] == '*':
			depth := 0
			for i < n {
				if i+1 < n && sql[i] == '/' && sql[i+1] == '*' {
					depth++
					i += 2
				} else if i+1 < n && sql[i] == '*' && sql[i+1] == '/' {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
		case c == '\'':
			end, val := scanString(sql, i, false)
			toks = append(toks, token{tokString, i, end, val})
			i = end
		case (c == 'e' || c == 'E') && i+1 < n && sql[i+1] == '\'':
			end, val := scanString(sql, i+1, true)
			toks = append(toks, token{tokString, i, end, val})
			i = end
		case (c == 'b' || c == 'B' || c == 'x' || c == 'X' || c == 'n' || c == 'N') && i+1 < n && sql[i+1] == '\'':
			end, val := scanString(sql, i+1, false)
			toks = append(toks, token{tokString, i, end, val})
			i = end
		case (c == 'u' || c == 'U') && i+2 < n && sql[i+1] == '&' && (sql[i+2] == '\'' || sql[i+2] == '"'):
			if sql[i+2] == '\'' {
				end, val := scanString(sql, i+2, false)
				toks = append(toks, token{tokString, i, end, val})
				i = end
			} else {
				end, val := scanQuoted(sql, i+2)
				toks = append(toks, token{tokQIdent, i, end, val})
				i = end
			}
		case c == '"':
			end, val := scanQuoted(sql, i)
			toks = append(toks, token{tokQIdent, i, end, val})
			i = end
		case c == '$':
			if i+1 < n && isDigit(sql[i+1]) {
				j := i + 1
				for j < n && isDigit(sql[j]) {
					j++
				}
				toks = append(toks, token{tokParam, i, j, sql[i:j]})
				i = j
				continue
			}
			if end, body, ok := scanDollar(sql, i); ok {
				toks = append(toks, token{tokString, i, end, body})
				i = end
				continue
			}
			toks = append(toks, token{tokPunct, i, i + 1, "$"})
			i++
		case isIdentStart(c):
			j := i + 1
			for j < n && isIdentCont(sql[j]) {
				j++
			}
			toks = append(toks, token{tokIdent, i, j, strings.ToLower(sql[i:j])})
			i = j
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(sql[i+1])):
			j := i
			for j < n && (isDigit(sql[j]) || sql[j] == '.' || sql[j] == '_') {
				j++
			}
			if j < n && (sql[j] == 'e' || sql[j] == 'E') {
				k := j + 1
				if k < n && (sql[k] == '+' || sql[k] == '-') {
					k++
				}
				if k < n && isDigit(sql[k]) {
					j = k
					for j < n && isDigit(sql[j]) {
						j++
					}
				}
			}
			toks = append(toks, token{tokNumber, i, j, sql[i:j]})
			i = j
		case strings.IndexByte("(),;[].", c) >= 0:
			toks = append(toks, token{tokPunct, i, i + 1, string(c)})
			i++
		default:
			j := i + 1
			for j < n && strings.IndexByte("+-*/<>=~!@#%^&|`?:", sql[j]) >= 0 && strings.IndexByte("+-*/<>=~!@#%^&|`?:", c) >= 0 {
				if sql[j] == '-' && j+1 < n && sql[j+1] == '-' || sql[j] == '/' && j+1 < n && sql[j+1] == '*' {
					break
				}
				j++
			}
			toks = append(toks, token{tokPunct, i, j, sql[i:j]})
			i = j
		}
	}
	return toks
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
func isIdentCont(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }

// scanString scans a '...' literal starting at the quote at i. With escapes,
// backslash escapes are honoured (E'...'); the decoding of those is only
// approximate (enough for option values), since the text itself is what
// reaches PostgreSQL.
func scanString(sql string, i int, escapes bool) (int, string) {
	var b strings.Builder
	j := i + 1
	for j < len(sql) {
		c := sql[j]
		if escapes && c == '\\' && j+1 < len(sql) {
			b.WriteByte(sql[j+1])
			j += 2
			continue
		}
		if c == '\'' {
			if j+1 < len(sql) && sql[j+1] == '\'' {
				b.WriteByte('\'')
				j += 2
				continue
			}
			return j + 1, b.String()
		}
		b.WriteByte(c)
		j++
	}
	return len(sql), b.String()
}

func scanQuoted(sql string, i int) (int, string) {
	var b strings.Builder
	j := i + 1
	for j < len(sql) {
		if sql[j] == '"' {
			if j+1 < len(sql) && sql[j+1] == '"' {
				b.WriteByte('"')
				j += 2
				continue
			}
			return j + 1, b.String()
		}
		b.WriteByte(sql[j])
		j++
	}
	return len(sql), b.String()
}

// scanDollar scans $tag$...$tag$ starting at i.
func scanDollar(sql string, i int) (int, string, bool) {
	j := i + 1
	for j < len(sql) && sql[j] != '$' {
		if !isIdentCont(sql[j]) || sql[j] == '$' {
			return 0, "", false
		}
		j++
	}
	if j >= len(sql) {
		return 0, "", false
	}
	tag := sql[i : j+1]
	k := strings.Index(sql[j+1:], tag)
	if k < 0 {
		return len(sql), sql[j+1:], true
	}
	return j + 1 + k + len(tag), sql[j+1 : j+1+k], true
}

// splitStatements splits a simple-protocol query string at top-level
// semicolons. Empty statements (only whitespace and comments) are dropped.
func splitStatements(sql string) []string {
	toks := lex(sql)
	var out []string
	start := 0
	depth := 0
	emit := func(end int) {
		part := strings.TrimSpace(sql[start:end])
		if len(lex(part)) > 0 {
			out = append(out, part)
		}
	}
	for _, t := range toks {
		if t.kind != tokPunct {
			continue
		}
		switch t.val {
		case "(", "[":
			depth++
		case ")", "]":
			if depth > 0 {
				depth--
			}
		case ";":
			if depth == 0 {
				emit(t.start)
				start = t.end
			}
		}
	}
	emit(len(sql))
	return out
}

// quoteIdent quotes name as a SQL identifier.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// quoteLiteral quotes s as a SQL string literal that does not depend on
// standard_conforming_strings.
func quoteLiteral(s string) string {
	if strings.ContainsRune(s, '\\') {
		return "E'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `''`) + "'"
	}
	return "'" + strings.ReplaceAll(s, `'`, `''`) + "'"
}
