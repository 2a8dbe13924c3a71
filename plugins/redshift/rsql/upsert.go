package rsql

import (
	"fmt"
	"regexp"
	"strings"
)

// write_mode = "upsert": the records are changes of the row their key
// names (shared/changes). Each chunk's staging rows carry every change, a
// delete as its key with a NULL payload, plus four change columns; the load
// transaction then applies, per key, the last change not applied before,
// and records the highest offset applied per topic-partition in the
// target's offsets table, all under the staging table's lock.

// Change op values in pico_op.
const (
	OpUpsert = "u"
	OpDelete = "d"
)

// changeColumns are the staging table's hidden columns in upsert mode, in
// order after the key columns. The target has none of them.
var changeColumns = []Column{
	{ID: ChangeOp, Name: "pico_op", Type: "VARCHAR(1)", Family: FamilyVarchar, Limit: 1},
	{ID: ChangeTopic, Name: "pico_change_topic", Type: "VARCHAR(256)", Family: FamilyVarchar, Limit: VarcharDefault},
	{ID: ChangePart, Name: "pico_change_partition", Type: "BIGINT", Family: FamilyBigint},
	{ID: ChangeOffset, Name: "pico_change_offset", Type: "BIGINT", Family: FamilyBigint},
}

// OffsetsPrefix makes a target's offsets table: offsets_<table>.
const OffsetsPrefix = "offsets_"

// Offsets returns the name of table's offsets table, which holds the
// highest offset applied to table per topic-partition. It has the length
// of the staging name, which CheckTableName bounds.
func Offsets(table string) string { return OffsetsPrefix + table }

// The offsets table's columns.
const (
	offTopic     = "topic"
	offPartition = "partition_id"
	offApplied   = "applied_offset"
)

// CreateOffsets is CREATE TABLE IF NOT EXISTS for an offsets table.
func CreateOffsets(offsets string) string {
	return "CREATE TABLE IF NOT EXISTS " + Ident(offsets) + " (\n  " + offTopic + " VARCHAR(256),\n  " +
		offPartition + " BIGINT,\n  " + offApplied + " BIGINT\n)"
}

// CheckOffsets compares an offsets table's pg_table_def rows with the
// columns CreateOffsets makes.
func CheckOffsets(table string, rows []TableDefRow) error {
	if len(rows) == 0 {
		return &NotFoundError{Table: table}
	}
	want := map[string]Family{offTopic: FamilyVarchar, offPartition: FamilyBigint, offApplied: FamilyBigint}
	have := map[string]string{}
	for _, r := range rows {
		have[strings.ToLower(r.Column)] = r.Type
	}
	var problems []string
	for _, name := range []string{offTopic, offPartition, offApplied} {
		typ, ok := have[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("column %s is missing (the offsets table of write_mode = \"upsert\")", name))
			continue
		}
		fam, length, ok := ParseType(typ)
		switch {
		case !ok || fam != want[name]:
			problems = append(problems, fmt.Sprintf("column %s is %s, expected %s", name, typ, want[name]))
		case name == offTopic && length > 0 && length < VarcharDefault:
			// Every load's INSERT of offsets would fail on a longer topic.
			problems = append(problems, fmt.Sprintf("column %s is %s, expected VARCHAR(%d) or wider", name, typ, VarcharDefault))
		}
	}
	if len(problems) > 0 {
		return &MismatchError{Table: table, Problems: problems}
	}
	return nil
}

// KeyPrefix starts the name of the column that holds a key field: field
// id is column key_id. The prefix keeps key columns apart from the sink's
// own (id, payload, created_at, pico_*), so any field can be a key.
const KeyPrefix = "key_"

// keyName is what a key field may be called: a plain identifier, so its
// column, folded to lower case as Redshift folds it, needs no quoting.
var keyName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// KeyColumnNames returns the table columns of key_columns' fields:
// key_<field> in lower case. It refuses fields that are not plain
// identifiers or whose column would be longer than Redshift keeps.
func KeyColumnNames(fields []string) ([]string, error) {
	out := make([]string, len(fields))
	for i, n := range fields {
		l := KeyPrefix + strings.ToLower(n)
		switch {
		case !keyName.MatchString(strings.ToLower(n)):
			return nil, fmt.Errorf("field %q is not a plain identifier (letters, digits and _, not starting with a digit): its column is %s<field>", n, KeyPrefix)
		case len(l) > IdentifierMax:
			return nil, fmt.Errorf("column %s of field %q is longer than Redshift's %d bytes", l, n, IdentifierMax)
		}
		for _, prev := range out[:i] {
			if prev == l {
				return nil, fmt.Errorf("fields named %q twice (Redshift folds column names to lower case)", l)
			}
		}
		out[i] = l
	}
	return out, nil
}

// Upsert is the SQL of the upsert load, after COPY into staging.
type Upsert struct {
	// Applied lists the ids of staged changes at or below the applied
	// offset of their topic-partition (a replay), before SkipApplied
	// removes them: a group load tells each batch its skipped count.
	Applied string
	// SkipApplied deletes those changes from staging.
	SkipApplied string
	// DeleteKeys deletes the target's rows of every key with a change.
	DeleteKeys string
	// Insert writes the row of every key whose last change is an upsert.
	Insert string
	// ForgetOffsets and RecordOffsets replace the applied offset of every
	// topic-partition with changes by the highest staged.
	ForgetOffsets string
	RecordOffsets string
}

// NewUpsert returns the upsert statements for table, its staging table and
// its offsets table. l is the target's layout.
//
// The last change of a key is the one with the highest offset (ties, which
// only a key in several partitions can have: the higher partition, then
// topic): ROW_NUMBER over the key. Offsets order changes within a
// partition only; for a key written to several partitions no order exists,
// and the sink documents what it does.
func NewUpsert(table, staging, offsets string, l *Layout) Upsert {
	T, S, O := Ident(table), Ident(staging), Ident(offsets)
	keys := l.Keys()
	var match, part []string
	for _, k := range keys {
		match = append(match, T+"."+k.Name+" = "+S+"."+k.Name)
		part = append(part, k.Name)
	}
	cols := columnList(l.Columns)
	onApplied := O + "." + offTopic + " = " + S + ".pico_change_topic AND " +
		O + "." + offPartition + " = " + S + ".pico_change_partition"
	return Upsert{
		Applied: "SELECT " + S + ".id FROM " + S + " JOIN " + O + " ON " + onApplied +
			" WHERE " + S + ".pico_change_offset <= " + O + "." + offApplied,
		SkipApplied: "DELETE FROM " + S + " USING " + O + " WHERE " + onApplied +
			" AND " + S + ".pico_change_offset <= " + O + "." + offApplied,
		DeleteKeys: "DELETE FROM " + T + " USING " + S + " WHERE " + strings.Join(match, " AND "),
		Insert: "INSERT INTO " + T + " (" + cols + ")" +
			" SELECT " + loadList(l.Columns) +
			" FROM (SELECT " + cols + ", pico_op, ROW_NUMBER() OVER (PARTITION BY " + strings.Join(part, ", ") +
			" ORDER BY pico_change_offset DESC, pico_change_partition DESC, pico_change_topic DESC) AS pico_rn FROM " + S + ") latest" +
			" WHERE latest.pico_rn = 1 AND latest.pico_op = " + Literal(OpUpsert),
		ForgetOffsets: "DELETE FROM " + O + " USING " + S + " WHERE " + onApplied,
		RecordOffsets: "INSERT INTO " + O + " (" + offTopic + ", " + offPartition + ", " + offApplied + ")" +
			" SELECT pico_change_topic, pico_change_partition, MAX(pico_change_offset) FROM " + S +
			" GROUP BY pico_change_topic, pico_change_partition",
	}
}
