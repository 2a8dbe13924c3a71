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
	// SuperMax is the largest JSON text the sink loads into a SUPER column.
	// Redshift holds up to 16 MB in one SUPER value, but "SUPER objects
	// larger than 1MB can only be ingested from" files (COPY of Parquet,
	// JSON, TEXT, CSV; the SUPER type page), and the sink ingests with
	// INSERT … JSON_PARSE from its VARBYTE staging column. A larger payload
	// would fail the INSERT on every redelivery; the pre-flight refuses it
	// instead, on the safe side of "1MB".
	SuperMax = 1000000
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
	// With write_mode = "upsert" (upsert.go): the key columns, in both
	// tables, and the staging table's hidden change columns.
	KeyColumn    // one per key column; Column.KeyIndex says which
	ChangeOp     // pico_op: 'u' upsert, 'd' delete
	ChangeTopic  // pico_change_topic: the record's topic
	ChangePart   // pico_change_partition: the record's partition
	ChangeOffset // pico_change_offset: the record's offset, the order of changes
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
	FamilySuper   Family = "SUPER"   // SUPER
)

// PayloadFormat is the column type of payload.
type PayloadFormat int

// Payload formats.
const (
	PayloadVarbyte PayloadFormat = iota // payload VARBYTE(16777216), the record bytes
	PayloadText                         // payload VARCHAR(MAX), the record as UTF-8 text
	PayloadSuper                        // payload SUPER, the record parsed by JSON_PARSE
)

func (f PayloadFormat) String() string {
	switch f {
	case PayloadText:
		return "text"
	case PayloadSuper:
		return "super"
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
	// Load is the expression the INSERT reads the column with from the
	// staging table; empty for the column itself. A SUPER payload is
	// staged as VARBYTE and parsed on the way into the target.
	Load string
	// KeyIndex is a KeyColumn's position in key_columns.
	KeyIndex int
}

// Options are the configuration keys that decide the columns.
type Options struct {
	IncludeMetadata bool // pico_offset, pico_timestamp, pico_topic, pico_partition
	IncludeKey      bool // pico_key
	Payload         PayloadFormat
	// KeyColumns, with write_mode = "upsert", are the key's columns
	// (lower-case names that need no quoting): both tables get them, the
	// staging table the change columns too, and its payload becomes
	// nullable (a delete has no row).
	KeyColumns []string
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

// superPayload is the target's payload with payload_format = "super". The
// staging table keeps the VARBYTE payload of the varbyte layout (COPY loads
// the Parquet bytes into it unparsed) and the INSERT applies JSON_PARSE,
// the path Redshift documents for putting JSON into SUPER with INSERT.
// JSON_PARSE takes VARBYTE as well as VARCHAR, and VARBYTE carries up to
// 16 MiB where VARCHAR(MAX) stops at 65535 bytes.
var superPayload = Column{ID: Payload, Name: "payload", Type: "SUPER", Family: FamilySuper, Limit: SuperMax,
	Load: "JSON_PARSE(payload)"}

// Layout is the ordered list of columns of a configuration. The order is
// the order of CREATE TABLE, of the COPY column list and of the Parquet
// columns: COPY maps Parquet columns to the list by position.
type Layout struct {
	Columns []Column
	index   [numColumns]int // position of each ColumnID, -1 when absent
	staging *Layout         // the staging table's columns when they differ; nil when the same
}

// NewLayout returns the columns o selects.
func NewLayout(o Options) *Layout {
	l := newLayout(o, false)
	if o.Payload == PayloadSuper || len(o.KeyColumns) > 0 {
		so := o
		if so.Payload == PayloadSuper {
			so.Payload = PayloadVarbyte
		}
		l.staging = newLayout(so, true)
	}
	return l
}

// newLayout builds the target's columns, or with staging those of the
// staging table (the same, plus the change columns in upsert mode).
func newLayout(o Options, staging bool) *Layout {
	l := &Layout{}
	for i := range l.index {
		l.index[i] = -1
	}
	add := func(c Column) {
		if l.index[c.ID] < 0 {
			l.index[c.ID] = len(l.Columns)
		}
		l.Columns = append(l.Columns, c)
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
		if c.ID == Payload {
			switch o.Payload {
			case PayloadText:
				c = textPayload
			case PayloadSuper:
				c = superPayload
			}
			// A delete stages its key with a NULL payload.
			c.Nullable = staging && len(o.KeyColumns) > 0
		}
		add(c)
	}
	for i, name := range o.KeyColumns {
		add(Column{ID: KeyColumn, Name: name, Type: "VARCHAR(MAX)", Family: FamilyVarchar, Limit: VarcharMax, KeyIndex: i})
	}
	if staging && len(o.KeyColumns) > 0 {
		for _, c := range changeColumns {
			add(c)
		}
	}
	return l
}

// Staging is the layout of the staging table: the same columns, in the same
// order, except that a SUPER payload is staged as VARBYTE (see
// superPayload), and with write_mode = "upsert" a nullable payload and the
// change columns after the key columns. COPY and the Parquet file follow
// this layout.
func (l *Layout) Staging() *Layout {
	if l.staging != nil {
		return l.staging
	}
	return l
}

// Keys returns the layout's key columns, in key_columns order; none
// unless write_mode = "upsert".
func (l *Layout) Keys() []Column {
	var out []Column
	for _, c := range l.Columns {
		if c.ID == KeyColumn {
			out = append(out, c)
		}
	}
	return out
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
