package rsql

import (
	"fmt"
	"strconv"
	"strings"
)

// TableDefRow is one row of TableDefQuery: a column and its type as
// pg_table_def spells it, e.g. "character varying(256)".
type TableDefRow struct {
	Column string
	Type   string
}

// NotFoundError says pg_table_def has no columns for a table: it does not
// exist, or it is in a schema outside the search_path.
type NotFoundError struct {
	Table string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("Table '%s' was not found or has no visible columns. pg_table_def only lists tables in schemas on the search_path, "+
		"and a dot in target_table is part of the table name, not a schema separator: set the schema through the connection string, "+
		"?options=-c%%20search_path%%3D<schema>", e.Table)
}

// MismatchError says an existing table's columns are not the ones the
// configuration implies.
type MismatchError struct {
	Table    string
	Problems []string // one line per column, e.g. "column payload is varbyte(16777216), payload_format = \"text\" expects VARCHAR"
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("Schema mismatch detected in table %s: %s. The table was created under different include_metadata, "+
		"include_key, payload_format or write_mode and key_columns settings; change the settings or the table, the sink does not alter existing tables",
		Ident(e.Table), strings.Join(e.Problems, "; "))
}

// families maps the type names pg_table_def (or PostgreSQL's format_type)
// uses to a family. Anything else, CHAR included (it pads with blanks), is
// of no family the sink writes.
var families = map[string]Family{
	"character varying": FamilyVarchar,
	"varchar":           FamilyVarchar,
	"nvarchar":          FamilyVarchar,
	"text":              FamilyVarchar,
	"bigint":            FamilyBigint,
	"int8":              FamilyBigint,
	"varbyte":           FamilyVarbyte,
	"varbinary":         FamilyVarbyte,
	"binary varying":    FamilyVarbyte,
	"bytea":             FamilyVarbyte,
	"super":             FamilySuper,
}

// ParseType splits a pg_table_def type into its family and its length in
// bytes (0 when it has none, as for bigint or an unbounded PostgreSQL text).
// ok is false for a type of no known family.
func ParseType(t string) (fam Family, length int, ok bool) {
	t = strings.ToLower(strings.TrimSpace(t))
	base, mod, hasMod := strings.Cut(t, "(")
	base = strings.TrimSpace(base)
	fam, ok = families[base]
	if !ok {
		return "", 0, false
	}
	if hasMod {
		mod = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(mod), ")"))
		switch {
		case mod == "max" && fam == FamilyVarchar:
			length = VarcharMax
		default:
			n, err := strconv.Atoi(mod)
			if err != nil || n < 0 {
				return "", 0, false
			}
			length = n
		}
	}
	return fam, length, true
}

// optionFor names the setting that brings a column into the layout, for
// mismatch messages.
func optionFor(id ColumnID) string {
	switch id {
	case Offset, Timestamp, Topic, Partition:
		return "include_metadata"
	case Key:
		return "include_key"
	case Payload:
		return "payload_format"
	case KeyColumn:
		return "key_columns"
	case ChangeOp, ChangeTopic, ChangePart, ChangeOffset:
		return `write_mode = "upsert"`
	}
	return ""
}

// Check compares a table's pg_table_def rows with the layout. Every column
// of the layout must be there with a type of its family, and no column of
// the sink's that the layout leaves out may be there (a table created with
// include_key = true does not match include_key = false). Other columns are
// allowed. Names compare case-insensitively, as Redshift folds them.
//
// On success it returns the layout's limits narrowed to the lengths the
// table really has, so a value that fits the sink's own DDL but not an
// older, narrower column is still caught before upload.
func Check(table string, l *Layout, rows []TableDefRow) (Limits, error) {
	if len(rows) == 0 {
		return nil, &NotFoundError{Table: table}
	}
	have := make(map[string]string, len(rows))
	var order []string
	for _, r := range rows {
		name := strings.ToLower(r.Column)
		if _, dup := have[name]; !dup {
			order = append(order, name)
		}
		have[name] = r.Type
	}
	lim := l.DefaultLimits()
	var problems []string
	expected := make(map[string]bool, len(l.Columns))
	for i, c := range l.Columns {
		expected[c.Name] = true
		typ, ok := have[c.Name]
		if !ok {
			why := "it is always written"
			switch opt := optionFor(c.ID); {
			case c.ID == KeyColumn, c.ID >= ChangeOp:
				why = "named by " + opt
				if c.ID >= ChangeOp {
					why = "a staging column of " + opt + "; a staging table made before write_mode = \"upsert\" lacks it: drop it, the sink creates it again"
				}
			case opt != "" && c.ID != Payload:
				why = opt + " = true"
			}
			problems = append(problems, fmt.Sprintf("column %s is missing (%s)", c.Name, why))
			continue
		}
		fam, length, ok := ParseType(typ)
		if !ok || fam != c.Family {
			want := string(c.Family)
			switch c.ID {
			case Payload:
				want = fmt.Sprintf("%s (payload_format = %q)", c.Family, formatOf(c))
			case KeyColumn:
				want = fmt.Sprintf("%s (key columns hold the key's text)", c.Family)
			}
			problems = append(problems, fmt.Sprintf("column %s is %s, expected %s", c.Name, typ, want))
			continue
		}
		if c.ID >= ChangeOp && length > 0 && length < c.Limit {
			// The sink writes these, not the records: a topic name fits
			// its VARCHAR(256), which a narrower column would refuse on
			// every COPY. Only the operator can widen it.
			problems = append(problems, fmt.Sprintf("column %s is %s, expected %s or wider (a staging column of %s: drop the staging table, the sink creates it again)",
				c.Name, typ, c.Type, optionFor(c.ID)))
			continue
		}
		if length > 0 && (lim[i] == 0 || length < lim[i]) && c.Family != FamilyBigint && c.Family != FamilySuper {
			lim[i] = length
		}
	}
	for _, name := range order {
		if expected[name] {
			continue
		}
		// A column of the sink's that this configuration leaves out means
		// the table was made under other settings. Columns the sink does
		// not know are the operator's own and are left alone: the COPY and
		// the INSERT name their columns, so such a column gets its default.
		if id, ok := sinkColumn(name); ok {
			problems = append(problems, fmt.Sprintf("column %s is present but %s = false", name, optionFor(id)))
		}
	}
	if len(problems) > 0 {
		return nil, &MismatchError{Table: table, Problems: problems}
	}
	return lim, nil
}

func formatOf(c Column) string {
	switch c.Family {
	case FamilyVarbyte:
		return PayloadVarbyte.String()
	case FamilySuper:
		return PayloadSuper.String()
	}
	return PayloadText.String()
}

func sinkColumn(name string) (ColumnID, bool) {
	for _, row := range columnTable {
		if row.Name == name {
			return row.ID, true
		}
	}
	return 0, false
}

// Narrow returns the smaller of two limits per column (the staging table and
// the target both have to hold every value).
func Narrow(a, b Limits) Limits {
	out := make(Limits, len(a))
	for i := range a {
		out[i] = a[i]
		if i < len(b) && b[i] > 0 && (out[i] == 0 || b[i] < out[i]) {
			out[i] = b[i]
		}
	}
	return out
}
