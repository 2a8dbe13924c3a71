package deltalog_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

func md(schema string, conf map[string]string) deltalog.Metadata {
	if conf == nil {
		conf = map[string]string{}
	}
	return deltalog.Metadata{ID: "t", Format: deltalog.Format{Provider: "parquet"}, SchemaString: schema,
		PartitionColumns: []string{}, Configuration: conf}
}

const plainSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"s","type":"string","nullable":true,"metadata":{}}]}`

func schemaWithFieldMetadata(key, value string) string {
	return `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"nested","type":{"type":"struct","fields":[{"name":"x","type":"integer","nullable":true,"metadata":{"` +
		key + `":` + value + `}}]},"nullable":true,"metadata":{}}]}`
}

func features(w ...string) deltalog.Protocol {
	return deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: w}
}

func rwFeatures(r []string, w ...string) deltalog.Protocol {
	return deltalog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: r, WriterFeatures: w}
}

func TestCheckWritable(t *testing.T) {
	cases := []struct {
		name   string
		p      deltalog.Protocol
		m      deltalog.Metadata
		refuse string // feature name, "protocol", "schema" or "" for writable
		msg    string // substring of the error
	}{
		{"legacy 1/1", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 1}, md(plainSchema, nil), "", ""},
		{"legacy 1/2 invariants unused", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, md(plainSchema, nil), "", ""},
		{"legacy 1/2 invariants used", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
			md(schemaWithFieldMetadata("delta.invariants", `"{\"expression\":{\"expression\":\"x > 3\"}}"`), nil),
			"invariants", `table feature "invariants" (column "nested.x" has delta.invariants) is not supported by this writer`},
		{"legacy 1/3 constraint", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 3},
			md(plainSchema, map[string]string{"delta.constraints.positive": "id > 0"}), "checkConstraints", `constraint "positive"`},
		{"legacy 1/2 ignores constraints", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
			md(plainSchema, map[string]string{"delta.constraints.positive": "id > 0"}), "", ""},
		{"legacy 1/4 generated column", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 4},
			md(schemaWithFieldMetadata("delta.generationExpression", `"id + 1"`), nil), "generatedColumns", ""},
		{"legacy 1/4 cdf on", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 4},
			md(plainSchema, map[string]string{"delta.enableChangeDataFeed": "true"}), "", ""},
		{"legacy 2/5 mapping none", deltalog.Protocol{MinReaderVersion: 2, MinWriterVersion: 5},
			md(plainSchema, map[string]string{"delta.columnMapping.mode": "none"}), "", ""},
		{"legacy 2/5 mapping name", deltalog.Protocol{MinReaderVersion: 2, MinWriterVersion: 5},
			md(plainSchema, map[string]string{"delta.columnMapping.mode": "name"}), "columnMapping",
			`table feature "columnMapping" (mode "name") is not supported by this writer`},
		{"legacy 1/6 identity", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 6},
			md(schemaWithFieldMetadata("delta.identity.start", `1`), nil), "identityColumns", ""},
		{"legacy 1/6 no identity", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 6}, md(plainSchema, nil), "", ""},
		{"writer 7 without invariants ignores metadata", features("appendOnly"),
			md(schemaWithFieldMetadata("delta.invariants", `"x"`), nil), "", ""},
		{"ignorable features", rwFeatures([]string{"deletionVectors", "v2Checkpoint", "vacuumProtocolCheck", "typeWidening"},
			"appendOnly", "changeDataFeed", "deletionVectors", "vacuumProtocolCheck", "domainMetadata", "v2Checkpoint",
			"checkpointProtection", "clustering", "typeWidening", "typeWidening-preview"),
			md(plainSchema, map[string]string{"delta.appendOnly": "true", "delta.enableDeletionVectors": "true"}), "", ""},
		{"implemented features", rwFeatures([]string{"timestampNtz"}, "timestampNtz", "inCommitTimestamp"),
			md(plainSchema, map[string]string{"delta.enableInCommitTimestamps": "true"}), "", ""},
		{"row tracking", features("domainMetadata", "rowTracking"), md(plainSchema, nil), "rowTracking", ""},
		{"row tracking suspended", features("domainMetadata", "rowTracking"),
			md(plainSchema, map[string]string{"delta.rowTrackingSuspended": "true"}), "", ""},
		{"iceberg v2 on", features("columnMapping", "icebergCompatV2"),
			md(plainSchema, map[string]string{"delta.enableIcebergCompatV2": "true"}), "icebergCompatV2", ""},
		{"iceberg v2 supported only", features("icebergCompatV2"), md(plainSchema, nil), "", ""},
		{"iceberg v3 on", features("icebergCompatV3"),
			md(plainSchema, map[string]string{"delta.enableIcebergCompatV3": "true"}), "icebergCompatV3", ""},
		{"catalog managed", rwFeatures([]string{"catalogManaged"}, "catalogManaged", "inCommitTimestamp"),
			md(plainSchema, map[string]string{"delta.enableInCommitTimestamps": "true"}), "catalogManaged", ""},
		{"catalog owned preview", rwFeatures([]string{"catalogOwned-preview"}, "catalogOwned-preview"),
			md(plainSchema, nil), "catalogOwned-preview", ""},
		{"unknown writer feature", features("fancyNewThing"), md(plainSchema, nil), "fancyNewThing", `"fancyNewThing" (unknown feature)`},
		{"unknown reader feature", rwFeatures([]string{"readerOnlyThing"}), md(plainSchema, nil), "readerOnlyThing", ""},
		{"reader version 4", deltalog.Protocol{MinReaderVersion: 4, MinWriterVersion: 7}, md(plainSchema, nil), "protocol", "reader 4"},
		{"writer version 8", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 8}, md(plainSchema, nil), "protocol", "writer 8"},
		{"reader 3 writer 6", deltalog.Protocol{MinReaderVersion: 3, MinWriterVersion: 6}, md(plainSchema, nil), "protocol", ""},
		{"variant column", rwFeatures([]string{"variantType"}, "variantType"),
			md(`{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}}]}`, nil), "variantType", ""},
		{"variant feature unused", rwFeatures([]string{"variantType"}, "variantType"), md(plainSchema, nil), "", ""},
		{"void in array", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
			md(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"a","type":{"type":"array","elementType":"void","containsNull":true},"nullable":true,"metadata":{}}]}`, nil),
			"schema", `column "a"`},
		{"all void", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
			md(`{"type":"struct","fields":[{"name":"v","type":"void","nullable":true,"metadata":{}}]}`, nil), "schema", "every column is void"},
		{"unknown type", deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
			md(`{"type":"struct","fields":[{"name":"g","type":"geometry(OGC:CRS84)","nullable":true,"metadata":{}}]}`, nil), "schema", "unknown type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := deltalog.CheckWritable(c.p, c.m)
			if c.refuse == "" {
				if err != nil {
					t.Fatalf("CheckWritable = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckWritable = nil, want refusal (%s)", c.refuse)
			}
			if !errors.Is(err, deltalog.ErrNotWritable) {
				t.Errorf("%v does not match ErrNotWritable", err)
			}
			switch c.refuse {
			case "protocol":
				var pe *deltalog.UnsupportedProtocolError
				if !errors.As(err, &pe) {
					t.Errorf("want UnsupportedProtocolError, got %v", err)
				}
			case "schema":
				var se *deltalog.UnsupportedSchemaError
				if !errors.As(err, &se) {
					t.Errorf("want UnsupportedSchemaError, got %v", err)
				}
			default:
				var fe *deltalog.UnsupportedFeatureError
				if !errors.As(err, &fe) || fe.Feature != c.refuse {
					t.Errorf("want UnsupportedFeatureError for %q, got %v", c.refuse, err)
				}
			}
			if c.msg != "" && !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not contain %q", err, c.msg)
			}
		})
	}
}

func TestSupportedFeaturesLegacy(t *testing.T) {
	cases := []struct {
		r, w int32
		want []string
	}{
		{1, 1, nil},
		{1, 2, []string{"appendOnly", "invariants"}},
		{1, 3, []string{"appendOnly", "invariants", "checkConstraints"}},
		{1, 4, []string{"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}},
		{2, 5, []string{"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"}},
		{2, 6, []string{"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping", "identityColumns"}},
	}
	for _, c := range cases {
		got := deltalog.SupportedFeatures(deltalog.Protocol{MinReaderVersion: c.r, MinWriterVersion: c.w})
		if !slices.Equal(got, c.want) {
			t.Errorf("(%d,%d): %v, want %v", c.r, c.w, got, c.want)
		}
	}
	// Feature lists replace implication; reader features join writer ones.
	got := deltalog.SupportedFeatures(rwFeatures([]string{"columnMapping", "odd"}, "columnMapping", "appendOnly"))
	if want := []string{"columnMapping", "appendOnly", "odd"}; !slices.Equal(got, want) {
		t.Errorf("table features: %v, want %v", got, want)
	}
}

// The feature table itself: every row is complete and the brief's policy
// holds, so a new row cannot silently loosen it.
func TestFeatureTable(t *testing.T) {
	policy := map[string]deltalog.WriterSupport{
		"appendOnly": deltalog.Ignorable, "changeDataFeed": deltalog.Ignorable, "deletionVectors": deltalog.Ignorable,
		"vacuumProtocolCheck": deltalog.Ignorable, "domainMetadata": deltalog.Ignorable, "v2Checkpoint": deltalog.Ignorable,
		"checkpointProtection": deltalog.Ignorable, "clustering": deltalog.Ignorable, "typeWidening": deltalog.Ignorable,
		"typeWidening-preview": deltalog.Ignorable,
		"timestampNtz":         deltalog.Implemented, "inCommitTimestamp": deltalog.Implemented,
		"invariants": deltalog.RefusedWhenActive, "checkConstraints": deltalog.RefusedWhenActive,
		"generatedColumns": deltalog.RefusedWhenActive, "identityColumns": deltalog.RefusedWhenActive,
		"columnMapping": deltalog.RefusedWhenActive, "rowTracking": deltalog.RefusedWhenActive,
		"icebergCompatV1": deltalog.RefusedWhenActive, "icebergCompatV2": deltalog.RefusedWhenActive,
		"catalogManaged": deltalog.RefusedWhenActive, "catalogOwned-preview": deltalog.RefusedWhenActive,
	}
	seen := map[string]bool{}
	for _, f := range deltalog.KnownFeatures() {
		if seen[f.Name] {
			t.Errorf("feature %q listed twice", f.Name)
		}
		seen[f.Name] = true
		if !f.Known || f.Kind == 0 || f.Writer == 0 {
			t.Errorf("feature %q row incomplete: %+v", f.Name, f)
		}
		if want, ok := policy[f.Name]; ok && f.Writer != want {
			t.Errorf("feature %q: writer support %v, want %v", f.Name, f.Writer, want)
		}
		if got := deltalog.LookupFeature(f.Name); got.Name != f.Name || !got.Known {
			t.Errorf("LookupFeature(%q) = %+v", f.Name, got)
		}
	}
	for name := range policy {
		if !seen[name] {
			t.Errorf("policy feature %q missing from the table", name)
		}
	}
	if u := deltalog.LookupFeature("nope"); u.Known || u.Writer != deltalog.RefusedWhenActive {
		t.Errorf("unknown catch-all = %+v", u)
	}
}

func TestTableFeaturesStatus(t *testing.T) {
	st, err := deltalog.TableFeatures(features("appendOnly", "inCommitTimestamp"),
		md(plainSchema, map[string]string{"delta.enableInCommitTimestamps": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[0].Name != "appendOnly" || st[0].Active || st[1].Name != "inCommitTimestamp" || !st[1].Active || st[1].Blocks {
		t.Errorf("statuses = %+v", st)
	}
}

func TestMissingFeatures(t *testing.T) {
	ntz := &deltalog.StructType{Fields: []deltalog.StructField{{Name: "a", Type: &deltalog.ArrayType{ElementType: deltalog.TypeTimestampNTZ}}}}
	plain := &deltalog.StructType{Fields: []deltalog.StructField{{Name: "a", Type: deltalog.TypeLong}}}
	legacy := deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	for _, tc := range []struct {
		p    deltalog.Protocol
		s    *deltalog.StructType
		want string
	}{
		{legacy, ntz, "timestampNtz"},
		{legacy, plain, ""},
		{deltalog.NewTableProtocol(ntz), ntz, ""},
		{deltalog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}, ntz, "timestampNtz"},
	} {
		if got := strings.Join(deltalog.MissingFeatures(tc.p, tc.s), ","); got != tc.want {
			t.Errorf("MissingFeatures(%+v, %s) = %q, want %q", tc.p, tc.s, got, tc.want)
		}
	}
}
