package rsql

import "github.com/picomq/heavy-sinks/shared/metadata"

// Redshift type limits, in bytes.
const (
	// VarcharDefault is what a bare VARCHAR (or TEXT) holds.
	VarcharDefault = 256
	// VarcharMax is what VARCHAR(MAX) holds.
	VarcharMax = 65535
	// VarbyteMax is the largest VARBYTE length Redshift accepts.
	VarbyteMax = 16777216
	// IdentifierMax is the longest identifier Redshift keeps, in bytes.
	IdentifierMax = 127
)

// ColumnID names a column independently of the layout it appears in.
type ColumnID int

// The columns the sink can write, in the order they appear in a table.
const (
	ID ColumnID = iota
	Offset
	Timestamp
	Topic
	Partition
	Key
	Payload
	CreatedAt
	numColumns
)

// Family is a Redshift type family. An existing column satisfies the
// configuration when its type is of the family the configuration expects,
// whatever its exact spelling or length.
type Family string

// Type families the sink's columns use.
const (
	FamilyVarchar Family = "VARCHAR" // CHARACTER VARYING, VARCHAR, NVARCHAR, TEXT
	FamilyBigint  Family = "BIGINT"  // BIGINT, INT8
	FamilyVarbyte Family = "VARBYTE" // VARBYTE, VARBINARY, BINARY VARYING, BYTEA
)

// PayloadFormat is the column type of payload.
type PayloadFormat int

// Payload formats.
const (
	PayloadVarbyte PayloadFormat = iota // payload VARBYTE(16777216), the record bytes
	PayloadText                         // payload VARCHAR(MAX), the record as UTF-8 text
)

func (f PayloadFormat) String() string {
	if f == PayloadText {
		return "text"
	}
	return "varbyte"
}

// Column is one column of the target and staging tables.
type Column struct {
	ID     ColumnID
	Name   string // lower case, needs no quoting
	Type   string // as written in CREATE TABLE
	Family Family
	// Limit is how many bytes a value of Type holds; 0 for BIGINT.
	Limit int
	// Nullable is true for pico_key, which is NULL when a record has no key.
	Nullable bool
}

// Options are the configuration keys that decide the columns.
type Options struct {
	IncludeMetadata bool // pico_offset, pico_timestamp, pico_topic, pico_partition
	IncludeKey      bool // pico_key
	Payload         PayloadFormat
}

// present says when a column is part of a layout.
type present int

const (
	always present = iota
	withMetadata
	withKey
)

// columnTable is every column the sink knows, in table order, with the DDL
// of the spec. Text payloads use VARCHAR(MAX), the widest VARCHAR Redshift
// has: 65535 bytes.
var columnTable = []struct {
	Column
	when present
}{
	{Column{ID: ID, Name: "id", Type: "VARCHAR(512)", Family: FamilyVarchar, Limit: 512}, always},
	{Column{ID: Offset, Name: metadata.Offset, Type: "VARCHAR(20)", Family: FamilyVarchar, Limit: 20}, withMetadata},
	{Column{ID: Timestamp, Name: metadata.Timestamp, Type: "VARCHAR(20)", Family: FamilyVarchar, Limit: 20}, withMetadata},
	{Column{ID: Topic, Name: metadata.Topic, Type: "VARCHAR", Family: FamilyVarchar, Limit: VarcharDefault}, withMetadata},
	{Column{ID: Partition, Name: metadata.Partition, Type: "BIGINT", Family: FamilyBigint}, withMetadata},
	{Column{ID: Key, Name: metadata.Key, Type: "VARCHAR(MAX)", Family: FamilyVarchar, Limit: VarcharMax, Nullable: true}, withKey},
	{Column{ID: Payload, Name: "payload", Type: "VARBYTE(16777216)", Family: FamilyVarbyte, Limit: VarbyteMax}, always},
	{Column{ID: CreatedAt, Name: "created_at", Type: "VARCHAR", Family: FamilyVarchar, Limit: VarcharDefault}, always},
}

var textPayload = Column{ID: Payload, Name: "payload", Type: "VARCHAR(MAX)", Family: FamilyVarchar, Limit: VarcharMax}

// Layout is the ordered list of columns of a configuration. The order is
// the order of CREATE TABLE, of the COPY column list and of the Parquet
// columns: COPY maps Parquet columns to the list by position.
type Layout struct {
	Columns []Column
	index   [numColumns]int // position of each ColumnID, -1 when absent
}

// NewLayout returns the columns o selects.
func NewLayout(o Options) *Layout {
	l := &Layout{}
	for i := range l.index {
		l.index[i] = -1
	}
	for _, row := range columnTable {
		switch row.when {
		case withMetadata:
			if !o.IncludeMetadata {
				continue
			}
		case withKey:
			if !o.IncludeKey {
				continue
			}
		}
		c := row.Column
		if c.ID == Payload && o.Payload == PayloadText {
			c = textPayload
		}
		l.index[c.ID] = len(l.Columns)
		l.Columns = append(l.Columns, c)
	}
	return l
}

// Has reports whether the layout includes the column.
func (l *Layout) Has(id ColumnID) bool { return l.index[id] >= 0 }

// Position is the 0-based position of the column, -1 when absent.
func (l *Layout) Position(id ColumnID) int { return l.index[id] }

// Names returns the column names in order.
func (l *Layout) Names() []string {
	names := make([]string, len(l.Columns))
	for i, c := range l.Columns {
		names[i] = c.Name
	}
	return names
}

// Limits are the byte limits of a layout's columns as the tables really
// have them, by position in the layout. Start from DefaultLimits and narrow
// with the widths pg_table_def reports (see Check).
type Limits []int

// DefaultLimits are the limits of the columns as the sink creates them.
func (l *Layout) DefaultLimits() Limits {
	lim := make(Limits, len(l.Columns))
	for i, c := range l.Columns {
		lim[i] = c.Limit
	}
	return lim
}
