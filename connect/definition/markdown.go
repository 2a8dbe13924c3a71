package definition

import (
	"fmt"
	"strings"
)

// Markdown renders the declared keys (keys.go) as the reference tables of
// docs/runtime.md, "Definitions"; a test keeps the docs in sync with it.
func Markdown() string {
	var b strings.Builder
	keyTable(&b, definitionKeys)
	b.WriteString("\nPer `[[topics]]` block:\n\n")
	keyTable(&b, topicKeys)
	b.WriteString("\nPer `[[topics.transforms]]` table:\n\n")
	keyTable(&b, transformKeys)
	b.WriteString("\nEach entry of `fields` (add_fields), one of `value`, `compute` and `header`:\n\n")
	keyTable(&b, fieldKeys)
	b.WriteString("\n`properties` (values are strings or, for the numeric keys, integers):\n\n")
	b.WriteString("| Key | Type | Values | Client setting |\n|---|---|---|---|\n")
	for _, p := range properties {
		typ, values := "string", code(p.values)
		if p.kind != "string" {
			typ = "integer, " + map[string]string{"ms": "milliseconds", "bytes": "bytes"}[p.kind]
			values = fmt.Sprintf("1 to %d", int32(1<<31-1))
		}
		if p.values != nil {
			values += " (any case)"
		}
		if typ == "string" && p.values == nil {
			values = "not empty"
		}
		row(&b, "`"+p.name+"`", typ, values, text(p.doc))
	}
	return b.String()
}

func keyTable(b *strings.Builder, keys []key) {
	b.WriteString("| Key | Type | Default | Values | Meaning |\n|---|---|---|---|---|\n")
	for _, k := range keys {
		def := "none"
		switch {
		case k.required != "":
			def = "required"
		case k.def != nil && *k.def == "":
			def = `""`
		case k.def != nil:
			def = "`" + *k.def + "`"
		case k.derived != "":
			def = "`" + k.derived + "`"
		}
		var values string
		switch {
		case k.refused != "":
			values = "refused"
		case k.values != nil:
			values = code(k.values)
			if k.unsupported != nil {
				values += "; refused: " + code(k.unsupported)
			}
		case k.max != nil:
			values = fmt.Sprintf("%d to %d", *k.min, *k.max)
		case k.min != nil:
			values = fmt.Sprintf("≥ %d", *k.min)
		}
		row(b, "`"+k.name+"`", k.typ, def, values, text(k.doc))
	}
}

// code lists values as "`a`, `b`".
func code(values []string) string {
	var q []string
	for _, v := range values {
		q = append(q, "`"+v+"`")
	}
	return strings.Join(q, ", ")
}

// text escapes a description written plainly in a tag, such as
// "picomq-connect-sink-<key>" or 'orders\..*', so Markdown shows it as is.
func text(s string) string {
	return strings.NewReplacer(`\`, `\\`, "<", "&lt;", "*", `\*`).Replace(s)
}

func row(b *strings.Builder, cells ...string) {
	for _, c := range cells {
		b.WriteString("| " + strings.ReplaceAll(c, "|", `\|`) + " ")
	}
	b.WriteString("|\n")
}
