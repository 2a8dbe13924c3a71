package deltalog

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Table features as one data table (PROTOCOL.md "Table Features", modelled
// on delta-kernel-rs table_features). Whether this package's writer may
// append to a table is decided by looking every supported feature up in
// knownFeatures — never by ad-hoc checks elsewhere.

// Protocol versions this writer understands.
const (
	// MaxReaderVersion / MaxWriterVersion: anything newer is refused.
	MaxReaderVersion = 3
	MaxWriterVersion = 7
	// TableFeaturesReaderVersion / TableFeaturesWriterVersion are the versions
	// at which readerFeatures / writerFeatures lists replace implied features.
	TableFeaturesReaderVersion = 3
	TableFeaturesWriterVersion = 7
)

// FeatureKind says who must understand a feature.
type FeatureKind int

const (
	WriterOnly FeatureKind = iota + 1
	ReaderWriter
)

func (k FeatureKind) String() string {
	switch k {
	case WriterOnly:
		return "writer"
	case ReaderWriter:
		return "reader-writer"
	}
	return "unknown"
}

// WriterSupport is this writer's policy for a feature.
type WriterSupport int

const (
	// Ignorable: appending is correct without doing anything for this feature
	// (for example deletionVectors: appends never write DVs).
	Ignorable WriterSupport = iota + 1
	// Implemented: the writer does what the feature requires
	// (inCommitTimestamp, timestampNtz).
	Implemented
	// RefusedWhenActive: the writer cannot honour the feature and refuses
	// the table while the feature is active.
	RefusedWhenActive
)

func (w WriterSupport) String() string {
	switch w {
	case Ignorable:
		return "ignorable"
	case Implemented:
		return "implemented"
	case RefusedWhenActive:
		return "refused-when-active"
	}
	return "unknown"
}

// Feature is one row of the feature table.
type Feature struct {
	Name string
	Kind FeatureKind
	// MinReader/MinWriter are the legacy protocol versions that imply the
	// feature without a feature list (0: only through feature lists).
	MinReader, MinWriter int32
	Writer               WriterSupport
	// Active reports whether a supported feature is in effect for this table
	// and, if so, a short detail for error messages. nil means "always
	// active once supported".
	Active func(t *TableView) (active bool, detail string)
	// Required, when set, reports whether a new table with this schema
	// must support the feature (NewTableProtocol). A schema that requires
	// a feature the writer refuses (variantType) makes a table CheckWritable
	// refuses: it is never created.
	Required func(s *StructType) bool
	// Known is false only for the Unknown catch-all row.
	Known bool
}

// TableView is what enablement rules look at.
type TableView struct {
	Protocol *Protocol
	Metadata *Metadata
	Schema   *StructType
}

func (t *TableView) prop(key string) string { return t.Metadata.Configuration[key] }

func (t *TableView) propTrue(key string) bool {
	return strings.EqualFold(strings.TrimSpace(t.prop(key)), "true")
}

// fieldWithMetadata finds the first field (any depth) whose metadata has a
// key accepted by match.
func (t *TableView) fieldWithMetadata(match func(key string) bool) (string, string, bool) {
	var col, key string
	found := false
	if t.Schema == nil {
		return "", "", false
	}
	walkFields(t.Schema, func(path []string, f *StructField) bool {
		for _, k := range slices.Sorted(maps.Keys(f.Metadata)) {
			if match(k) {
				col, key, found = strings.Join(path, "."), k, true
				return false
			}
		}
		return true
	})
	return col, key, found
}

func propIsTrue(key string) func(*TableView) (bool, string) {
	return func(t *TableView) (bool, string) {
		if t.propTrue(key) {
			return true, key + "=true"
		}
		return false, ""
	}
}

func fieldMetadataRule(match func(string) bool) func(*TableView) (bool, string) {
	return func(t *TableView) (bool, string) {
		if col, key, ok := t.fieldWithMetadata(match); ok {
			return true, fmt.Sprintf("column %q has %s", col, key)
		}
		return false, ""
	}
}

func exactKey(k string) func(string) bool { return func(s string) bool { return s == k } }

func schemaHasType(name string, pred func(DataType) bool) func(*TableView) (bool, string) {
	return func(t *TableView) (bool, string) {
		if t.Schema != nil && containsType(t.Schema, pred) {
			return true, "schema has a " + name + " column"
		}
		return false, ""
	}
}

// knownFeatures is the feature table. Order is the order errors are reported in.
var knownFeatures = []Feature{
	// Legacy writer features (implied by writer versions 2..6).
	{Name: "appendOnly", Kind: WriterOnly, MinReader: 1, MinWriter: 2, Writer: Ignorable,
		Active: propIsTrue("delta.appendOnly")},
	{Name: "invariants", Kind: WriterOnly, MinReader: 1, MinWriter: 2, Writer: RefusedWhenActive,
		Active: fieldMetadataRule(exactKey("delta.invariants"))},
	{Name: "checkConstraints", Kind: WriterOnly, MinReader: 1, MinWriter: 3, Writer: RefusedWhenActive,
		Active: func(t *TableView) (bool, string) {
			keys := make([]string, 0)
			for k := range t.Metadata.Configuration {
				if strings.HasPrefix(k, "delta.constraints.") {
					keys = append(keys, k)
				}
			}
			if len(keys) == 0 {
				return false, ""
			}
			slices.Sort(keys)
			return true, fmt.Sprintf("constraint %q", strings.TrimPrefix(keys[0], "delta.constraints."))
		}},
	{Name: "changeDataFeed", Kind: WriterOnly, MinReader: 1, MinWriter: 4, Writer: Ignorable,
		Active: propIsTrue("delta.enableChangeDataFeed")},
	{Name: "generatedColumns", Kind: WriterOnly, MinReader: 1, MinWriter: 4, Writer: RefusedWhenActive,
		Active: fieldMetadataRule(exactKey("delta.generationExpression"))},
	{Name: "columnMapping", Kind: ReaderWriter, MinReader: 2, MinWriter: 5, Writer: RefusedWhenActive,
		Active: func(t *TableView) (bool, string) {
			mode := strings.ToLower(strings.TrimSpace(t.prop("delta.columnMapping.mode")))
			if mode == "" || mode == "none" {
				return false, ""
			}
			return true, fmt.Sprintf("mode %q", mode)
		}},
	{Name: "identityColumns", Kind: WriterOnly, MinReader: 1, MinWriter: 6, Writer: RefusedWhenActive,
		Active: fieldMetadataRule(func(k string) bool { return strings.HasPrefix(k, "delta.identity.") })},

	// Table-features-only writer features.
	{Name: "inCommitTimestamp", Kind: WriterOnly, Writer: Implemented,
		Active: propIsTrue("delta.enableInCommitTimestamps")},
	{Name: "domainMetadata", Kind: WriterOnly, Writer: Ignorable},
	{Name: "rowTracking", Kind: WriterOnly, Writer: RefusedWhenActive,
		// Writers must assign row ids whenever the feature is supported and
		// not suspended — delta.enableRowTracking only says readers may rely
		// on them.
		Active: func(t *TableView) (bool, string) {
			if t.propTrue("delta.rowTrackingSuspended") {
				return false, ""
			}
			return true, "row ids must be assigned"
		}},
	{Name: "clustering", Kind: WriterOnly, Writer: Ignorable},
	{Name: "icebergCompatV1", Kind: WriterOnly, Writer: RefusedWhenActive,
		Active: propIsTrue("delta.enableIcebergCompatV1")},
	{Name: "icebergCompatV2", Kind: WriterOnly, Writer: RefusedWhenActive,
		Active: propIsTrue("delta.enableIcebergCompatV2")},
	{Name: "allowColumnDefaults", Kind: WriterOnly, Writer: RefusedWhenActive,
		Active: fieldMetadataRule(exactKey("CURRENT_DEFAULT"))},
	{Name: "materializePartitionColumns", Kind: WriterOnly, Writer: RefusedWhenActive},
	{Name: "checkpointProtection", Kind: WriterOnly, Writer: Ignorable},

	// Reader-writer features.
	{Name: "deletionVectors", Kind: ReaderWriter, Writer: Ignorable,
		Active: propIsTrue("delta.enableDeletionVectors")},
	{Name: "timestampNtz", Kind: ReaderWriter, Writer: Implemented,
		Required: func(s *StructType) bool {
			return containsType(s, func(d DataType) bool { return d == TypeTimestampNTZ })
		}},
	{Name: "v2Checkpoint", Kind: ReaderWriter, Writer: Ignorable},
	{Name: "vacuumProtocolCheck", Kind: ReaderWriter, Writer: Ignorable},
	{Name: "typeWidening", Kind: ReaderWriter, Writer: Ignorable},
	{Name: "typeWidening-preview", Kind: ReaderWriter, Writer: Ignorable},
	{Name: "catalogManaged", Kind: ReaderWriter, Writer: RefusedWhenActive},
	{Name: "catalogOwned-preview", Kind: ReaderWriter, Writer: RefusedWhenActive},
	{Name: "variantType", Kind: ReaderWriter, Writer: RefusedWhenActive,
		Active:   schemaHasType("variant", func(d DataType) bool { return d == TypeVariant }),
		Required: func(s *StructType) bool { return containsType(s, func(d DataType) bool { return d == TypeVariant }) }},
	{Name: "variantType-preview", Kind: ReaderWriter, Writer: RefusedWhenActive,
		Active: schemaHasType("variant", func(d DataType) bool { return d == TypeVariant })},
	// Shredding only permits shredded files; unshredded (or no) variant data
	// stays valid, and variantType above already refuses variant columns.
	{Name: "variantShredding", Kind: ReaderWriter, Writer: Ignorable},
	{Name: "variantShredding-preview", Kind: ReaderWriter, Writer: Ignorable},
	{Name: "geospatial", Kind: ReaderWriter, Writer: RefusedWhenActive},
}

// KnownFeatures returns a copy of the feature table.
func KnownFeatures() []Feature { return slices.Clone(knownFeatures) }

// LookupFeature returns the table row for name. Names not in the table get
// the Unknown catch-all: refused whenever supported. Any icebergCompatVn
// beyond the listed ones is refused while delta.enableIcebergCompatVn=true.
func LookupFeature(name string) Feature {
	for _, f := range knownFeatures {
		if f.Name == name {
			return f
		}
	}
	if v, ok := strings.CutPrefix(name, "icebergCompat"); ok && v != "" {
		return Feature{Name: name, Kind: WriterOnly, Writer: RefusedWhenActive, Known: true,
			Active: propIsTrue("delta.enableIcebergCompat" + v)}
	}
	return Feature{Name: name, Writer: RefusedWhenActive, Active: func(*TableView) (bool, string) {
		return true, "unknown feature"
	}}
}

func init() {
	for i := range knownFeatures {
		knownFeatures[i].Known = true
	}
}

// SupportedFeatures returns the features the protocol declares: the
// feature lists at reader 3 / writer 7, and the features implied by legacy
// versions below that.
func SupportedFeatures(p Protocol) []string {
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	// One side of the protocol: the features it lists from table-features
	// versions on, else the known ones whose legacy version (above the
	// side's base) it reaches.
	side := func(version, featuresFrom int32, listed []string, base int32, legacy func(Feature) int32) {
		if version >= featuresFrom {
			for _, n := range listed {
				add(n)
			}
			return
		}
		for _, f := range knownFeatures {
			if v := legacy(f); v > base && v <= version {
				add(f.Name)
			}
		}
	}
	side(p.MinWriterVersion, TableFeaturesWriterVersion, p.WriterFeatures, 0, func(f Feature) int32 { return f.MinWriter })
	side(p.MinReaderVersion, TableFeaturesReaderVersion, p.ReaderFeatures, 1, func(f Feature) int32 { return f.MinReader })
	return names
}

// NewTableProtocol returns the lowest protocol a new table with this
// schema needs: reader 1 / writer 2 (what every Delta reader and writer
// takes, Spark's default), unless a feature of the table's Required rule
// asks for more. A feature with legacy versions raises them; one without
// (timestampNtz) moves the table to reader 3 / writer 7 with feature lists
// that name only what is required.
func NewTableProtocol(s *StructType) Protocol {
	p := Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	var required []Feature
	writerLists, readerLists := false, false
	for _, f := range knownFeatures {
		if f.Required == nil || !f.Required(s) {
			continue
		}
		required = append(required, f)
		writerLists = writerLists || f.MinWriter == 0
		readerLists = readerLists || (f.Kind == ReaderWriter && f.MinReader == 0)
		p.MinReaderVersion = max(p.MinReaderVersion, f.MinReader)
		p.MinWriterVersion = max(p.MinWriterVersion, f.MinWriter)
	}
	if writerLists {
		// At writer 7 only listed features are supported, legacy ones too.
		p.MinWriterVersion = TableFeaturesWriterVersion
		for _, f := range required {
			p.WriterFeatures = append(p.WriterFeatures, f.Name)
		}
	}
	if readerLists {
		p.MinReaderVersion = TableFeaturesReaderVersion
		p.ReaderFeatures = []string{}
		for _, f := range required {
			if f.Kind == ReaderWriter {
				p.ReaderFeatures = append(p.ReaderFeatures, f.Name)
			}
		}
	}
	return p
}

// MissingFeatures returns the features a table with schema s must
// support (the Required rules NewTableProtocol applies) that protocol p
// does not declare: columns of s added to a table of protocol p would ask
// for a protocol upgrade first.
func MissingFeatures(p Protocol, s *StructType) []string {
	supported := SupportedFeatures(p)
	var out []string
	for _, f := range knownFeatures {
		if f.Required != nil && f.Required(s) && !slices.Contains(supported, f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}

// FeatureStatus is one supported feature evaluated against a table.
type FeatureStatus struct {
	Feature
	Active bool
	Detail string
	// Blocks is true when this feature makes the table unwritable.
	Blocks bool
}

// TableFeatures evaluates every supported feature of a table.
func TableFeatures(p Protocol, m Metadata) ([]FeatureStatus, error) {
	schema, err := ParseSchema(m.SchemaString)
	if err != nil {
		return nil, err
	}
	return tableFeatures(p, m, schema), nil
}

func tableFeatures(p Protocol, m Metadata, schema *StructType) []FeatureStatus {
	view := &TableView{Protocol: &p, Metadata: &m, Schema: schema}
	var out []FeatureStatus
	for _, name := range SupportedFeatures(p) {
		f := LookupFeature(name)
		st := FeatureStatus{Feature: f, Active: true}
		if f.Active != nil {
			st.Active, st.Detail = f.Active(view)
		}
		st.Blocks = f.Writer == RefusedWhenActive && st.Active
		out = append(out, st)
	}
	// Report in table order, unknown features last, for stable messages.
	rank := func(n string) int {
		if i := slices.IndexFunc(knownFeatures, func(f Feature) bool { return f.Name == n }); i >= 0 {
			return i
		}
		return len(knownFeatures)
	}
	slices.SortStableFunc(out, func(a, b FeatureStatus) int { return rank(a.Name) - rank(b.Name) })
	return out
}

// ErrNotWritable is matched (errors.Is) by every refusal from CheckWritable.
var ErrNotWritable = errors.New("deltalog: table is not writable by this writer")

// UnsupportedFeatureError names the table feature that blocks writing.
type UnsupportedFeatureError struct {
	Feature string
	Detail  string
}

func (e *UnsupportedFeatureError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("table feature %q (%s) is not supported by this writer", e.Feature, e.Detail)
	}
	return fmt.Sprintf("table feature %q is not supported by this writer", e.Feature)
}

func (e *UnsupportedFeatureError) Unwrap() error { return ErrNotWritable }

// UnsupportedProtocolError reports protocol versions outside what this
// writer understands.
type UnsupportedProtocolError struct {
	Reader, Writer int32
	Reason         string
}

func (e *UnsupportedProtocolError) Error() string {
	return fmt.Sprintf("table protocol (reader %d, writer %d) is not supported by this writer: %s", e.Reader, e.Writer, e.Reason)
}

func (e *UnsupportedProtocolError) Unwrap() error { return ErrNotWritable }

// UnsupportedSchemaError reports a schema shape the writer cannot write.
type UnsupportedSchemaError struct {
	Column string
	Reason string
}

func (e *UnsupportedSchemaError) Error() string {
	if e.Column == "" {
		return "table schema is not supported by this writer: " + e.Reason
	}
	return fmt.Sprintf("column %q is not supported by this writer: %s", e.Column, e.Reason)
}

func (e *UnsupportedSchemaError) Unwrap() error { return ErrNotWritable }

// CheckWritable reports whether this package's writer may blind-append to a
// table with this protocol and metadata. It returns nil, or every reason the
// table is refused (errors.Join), each matching ErrNotWritable.
func CheckWritable(p Protocol, m Metadata) error {
	schema, err := ParseSchema(m.SchemaString)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotWritable, err)
	}
	return checkWritable(p, m, schema)
}

func checkWritable(p Protocol, m Metadata, schema *StructType) error {
	switch {
	case p.MinReaderVersion < 1 || p.MinWriterVersion < 1:
		return &UnsupportedProtocolError{p.MinReaderVersion, p.MinWriterVersion, "versions must be at least 1"}
	case p.MinReaderVersion > MaxReaderVersion || p.MinWriterVersion > MaxWriterVersion:
		return &UnsupportedProtocolError{p.MinReaderVersion, p.MinWriterVersion,
			fmt.Sprintf("supported up to reader %d, writer %d", MaxReaderVersion, MaxWriterVersion)}
	case p.MinReaderVersion >= TableFeaturesReaderVersion && p.MinWriterVersion < TableFeaturesWriterVersion:
		return &UnsupportedProtocolError{p.MinReaderVersion, p.MinWriterVersion,
			"reader version 3 requires writer version 7"}
	}
	var errs []error
	for _, st := range tableFeatures(p, m, schema) {
		if st.Blocks {
			errs = append(errs, &UnsupportedFeatureError{Feature: st.Name, Detail: st.Detail})
		}
	}
	errs = append(errs, checkSchemaWritable(schema)...)
	return errors.Join(errs...)
}

// checkSchemaWritable refuses types the writer cannot produce and the void
// shapes PROTOCOL.md "Void Type" forbids writing data files for.
func checkSchemaWritable(s *StructType) []error {
	var errs []error
	var check func(col string, t DataType, inCollection bool)
	check = func(col string, t DataType, inCollection bool) {
		switch t := t.(type) {
		case PrimitiveType:
			if !t.Known() {
				errs = append(errs, &UnsupportedSchemaError{col, fmt.Sprintf("unknown type %q", string(t))})
			} else if t == TypeVoid && inCollection {
				errs = append(errs, &UnsupportedSchemaError{col, "void inside an array or map"})
			}
		case *ArrayType:
			check(col, t.ElementType, true)
		case *MapType:
			check(col, t.KeyType, true)
			check(col, t.ValueType, true)
		case *StructType:
			if allVoid(t) {
				errs = append(errs, &UnsupportedSchemaError{col, "struct whose fields are all void"})
			}
			for _, f := range t.Fields {
				check(col+"."+f.Name, f.Type, inCollection)
			}
		}
	}
	if allVoid(s) {
		errs = append(errs, &UnsupportedSchemaError{"", "every column is void"})
	}
	for _, f := range s.Fields {
		check(f.Name, f.Type, false)
	}
	return errs
}

func allVoid(s *StructType) bool {
	if len(s.Fields) == 0 {
		return false
	}
	for _, f := range s.Fields {
		if f.Type != TypeVoid {
			return false
		}
	}
	return true
}

// inCommitTimestampEnabled: supported (writer feature) and the property on.
func inCommitTimestampEnabled(p *Protocol, m *Metadata) bool {
	if p == nil || m == nil || p.MinWriterVersion < TableFeaturesWriterVersion || !p.HasWriterFeature("inCommitTimestamp") {
		return false
	}
	return strings.EqualFold(strings.TrimSpace(m.Configuration["delta.enableInCommitTimestamps"]), "true")
}
