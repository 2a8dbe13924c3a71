package audit_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/connect/definition"
)

func block(t *testing.T, schema, transforms string) *definition.Topic {
	t.Helper()
	d, err := definition.Parse("d.toml", []byte(`type = "sink"
key = "k"
path = "libx"
[[topics]]
topics = ["a"]
schema = "`+schema+`"
`+transforms))
	if err != nil {
		t.Fatal(err)
	}
	return &d.Topics[0]
}

// NewSkipper decides again what the block left out on purpose: records a
// filter drops, and empty payloads only when the plugin skips them;
// records a transform fails on are not skips (they are dead letters).
func TestSkipper(t *testing.T) {
	filter := `[[topics.transforms]]
type = "filter_records"
field = "kind"
equals = "test"
action = "drop"
`
	tp := audit.TP{Topic: "a"}
	rec := func(v string) audit.Record { return audit.Record{Value: []byte(v)} }

	skip, ok := audit.NewSkipper(block(t, "json", filter), false)
	if !ok || skip == nil {
		t.Fatal("json block with transforms: no skipper")
	}
	for v, want := range map[string]bool{`{"kind":"test"}`: true, `{"kind":"real"}`: false, `{"kind":`: false, ``: false} {
		if got := skip(tp, rec(v)); got != want {
			t.Errorf("%q: skipped %v, want %v", v, got, want)
		}
	}
	skip, _ = audit.NewSkipper(block(t, "json", filter), true)
	if !skip(tp, rec("")) {
		t.Error("empty payload with skipEmpty: not skipped")
	}
	if skip, ok := audit.NewSkipper(block(t, "json", ""), false); !ok || skip != nil {
		t.Error("plain block skips something")
	}
	if _, ok := audit.NewSkipper(block(t, "avro", "avro_schema_json = '\"string\"'\n"+filter), false); ok {
		t.Error("avro block with transforms: claimed to decide its drops")
	}
}
