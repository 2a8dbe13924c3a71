package deltalog_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

func TestActionsRoundTrip(t *testing.T) {
	in := []byte(strings.Join([]string{
		`{"commitInfo":{"timestamp":1,"inCommitTimestamp":2,"operation":"WRITE","operationParameters":{"mode":"Append"},"engineInfo":"x","txnId":"t","clusterId":"c","nested":{"a":[1,2]}}}`,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`,
		`{"metaData":{"id":"i","name":null,"format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":["p"],"configuration":{"k":"v"},"createdTime":5}}`,
		`{"txn":{"appId":"a","version":3,"lastUpdated":9}}`,
		`{"add":{"path":"p=1/f.parquet","partitionValues":{"p":"1","q":null},"size":10,"modificationTime":11,"dataChange":true,"stats":"{}","tags":{"t":"1"},"deletionVector":{"storageType":"u","pathOrInlineDv":"x","offset":1,"sizeInBytes":2,"cardinality":3},"unknownField":1}}`,
		`{"remove":{"path":"f","deletionTimestamp":4,"dataChange":true}}`,
		`{"domainMetadata":{"domain":"d","configuration":"{}","removed":false}}`,
		`{"cdc":{"path":"_change_data/c","partitionValues":{},"size":1,"dataChange":false}}`,
		`{"checkpointMetadata":{"version":7}}`,
		`{"sidecar":{"path":"s.parquet","sizeInBytes":1,"modificationTime":2}}`,
		`{"futureAction":{"whatever":[1,{"x":null}]}}`,
		``,
	}, "\n"))
	actions, err := deltalog.ParseActions(in)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"commitInfo", "protocol", "metaData", "txn", "add", "remove", "domainMetadata", "cdc", "checkpointMetadata", "sidecar", "futureAction"}
	if len(actions) != len(kinds) {
		t.Fatalf("got %d actions, want %d", len(actions), len(kinds))
	}
	for i, k := range kinds {
		if actions[i].Kind() != k {
			t.Errorf("action %d kind %q, want %q", i, actions[i].Kind(), k)
		}
	}
	ci := actions[0].(*deltalog.CommitInfo)
	if *ci.InCommitTimestamp != 2 || ci.TxnID != "t" || string(ci.Other["clusterId"]) != `"c"` {
		t.Errorf("commitInfo = %+v", ci)
	}
	add := actions[4].(*deltalog.Add)
	if add.PartitionValues["q"] != nil || *add.PartitionValues["p"] != "1" || len(add.DeletionVector) == 0 {
		t.Errorf("add = %+v", add)
	}
	if _, ok := actions[10].(*deltalog.UnknownAction); !ok {
		t.Errorf("unknown action decoded as %T", actions[10])
	}

	// Encoding and decoding again is stable, and every line is one action.
	out, err := deltalog.EncodeActions(actions)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(out, []byte("\n")) != len(actions) {
		t.Errorf("encoded %d lines for %d actions", bytes.Count(out, []byte("\n")), len(actions))
	}
	again, err := deltalog.ParseActions(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(actions, again) {
		t.Errorf("round trip changed actions:\n%s", out)
	}
	// commitInfo keeps the unknown keys.
	var m map[string]map[string]any
	_ = json.Unmarshal(bytes.SplitN(out, []byte("\n"), 2)[0], &m)
	if m["commitInfo"]["clusterId"] != "c" || m["commitInfo"]["nested"] == nil {
		t.Errorf("commitInfo lost fields: %v", m)
	}
}

func TestParseActionErrors(t *testing.T) {
	for _, line := range []string{`not json`, `{}`, `{"add":{},"remove":{}}`, `{"txn":{"version":"x"}}`, `[1]`} {
		if _, err := deltalog.ParseAction([]byte(line)); err == nil {
			t.Errorf("ParseAction(%s) succeeded", line)
		}
	}
}

func TestSchemaRoundTrip(t *testing.T) {
	src := `{"type":"struct","fields":[` +
		`{"name":"d","type":"decimal(10, 2)","nullable":false,"metadata":{"delta.columnMapping.id":5,"comment":"x"}},` +
		`{"name":"a","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"x","type":"timestamp_ntz","nullable":true,"metadata":{}}]},"containsNull":false},"nullable":true,"metadata":{}},` +
		`{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"map","keyType":"integer","valueType":"binary","valueContainsNull":true},"valueContainsNull":false},"nullable":true,"metadata":{}},` +
		`{"name":"n","type":"newtype","nullable":true,"metadata":{}}]}`
	s, err := deltalog.ParseSchema(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "struct<d:decimal(10,2),a:array<struct<x:timestamp_ntz>>,m:map<string,map<integer,binary>>,n:newtype>" {
		t.Errorf("String() = %s", got)
	}
	d := s.Field("d")
	if d.Nullable || d.Type != (deltalog.DecimalType{Precision: 10, Scale: 2}) || string(d.Metadata["delta.columnMapping.id"]) != "5" {
		t.Errorf("field d = %+v", d)
	}
	if v, ok := d.MetadataString("comment"); !ok || v != "x" {
		t.Errorf("MetadataString = %q, %v", v, ok)
	}
	if s.Field("n").Type.(deltalog.PrimitiveType).Known() {
		t.Error("unknown primitive reported as known")
	}
	out, err := deltalog.MarshalSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := deltalog.ParseSchema(out)
	if err != nil || !reflect.DeepEqual(s, s2) {
		t.Errorf("schema round trip: %v\n%s", err, out)
	}
	for _, bad := range []string{`"long"`, `{"type":"struct","fields":[{"name":"x","type":"decimal(40,2)"}]}`,
		`{"type":"struct","fields":[{"name":"x","type":{"type":"udt"}}]}`, `{`} {
		if _, err := deltalog.ParseSchema(bad); err == nil {
			t.Errorf("ParseSchema(%s) succeeded", bad)
		}
	}
	if s, err := deltalog.ParseSchema(`{"type":"struct","fields":[{"name":"x","type":"decimal"}]}`); err != nil ||
		s.Fields[0].Type != (deltalog.DecimalType{Precision: 10}) || !s.Fields[0].Nullable {
		t.Errorf("bare decimal: %v %v", s, err)
	}
}

func TestParseInterval(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"interval 7 days", 7 * 24 * time.Hour, false},
		{"interval 1 day", 24 * time.Hour, false},
		{"INTERVAL 2 WEEKS", 14 * 24 * time.Hour, false},
		{"interval 1 hour 30 minutes", 90 * time.Minute, false},
		{"  interval   5   seconds ", 5 * time.Second, false},
		{"3 hours", 3 * time.Hour, false},
		{"interval 10 milliseconds", 10 * time.Millisecond, false},
		{"interval 0 days", 0, false},
		{"interval 1 month", 0, true},
		{"interval 1 year", 0, true},
		{"interval -1 days", 0, true},
		{"interval 1.5 days", 0, true},
		{"interval days", 0, true},
		{"interval", 0, true},
		{"7 fortnights", 0, true},
		{"interval 9999999999999 weeks", 0, true},
	}
	for _, c := range cases {
		got, err := deltalog.ParseInterval(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseInterval(%q) = %v, %v; want %v (err %v)", c.in, got, err, c.want, c.err)
		}
	}
}

// A remove with extendedFileMetadata = true carries partitionValues, an
// unpartitioned table's empty map included (PROTOCOL.md: the extended
// fields are then present); without it an absent map stays absent.
func TestRemoveWithExtendedMetadataCarriesPartitionValues(t *testing.T) {
	yes, size := true, int64(7)
	for _, c := range []struct {
		r    deltalog.Remove
		want string
	}{
		{deltalog.Remove{Path: "f", ExtendedFileMetadata: &yes, Size: &size},
			`{"path":"f","dataChange":false,"extendedFileMetadata":true,"size":7,"partitionValues":{}}`},
		{deltalog.Remove{Path: "f"}, `{"path":"f","dataChange":false}`},
	} {
		got, err := json.Marshal(&c.r)
		if err != nil || string(got) != c.want {
			t.Errorf("%+v: %s (%v), want %s", c.r, got, err, c.want)
		}
	}
}
