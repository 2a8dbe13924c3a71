package sdk_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

type destConfig struct {
	URI    string `config:"table_uri,required,template,destination" doc:"Where"`
	Secret string `config:"secret_key,secret" doc:"A secret"`
}

// The destination is the configured text, template unresolved, with the
// environment override applied as open applies it.
func TestDestination(t *testing.T) {
	s, err := sdk.SchemaOf[destConfig]()
	if err != nil {
		t.Fatal(err)
	}
	raw := json.RawMessage(`{"table_uri":"s3://lake/{topic_segment[-1]}"}`)
	if got := sdk.Destination(s.Fields, raw, "orders", sdk.Env{}); got != "s3://lake/{topic_segment[-1]}" {
		t.Errorf("Destination = %q", got)
	}
	env := sdk.EnvFrom([]string{"PICOMQ_CONNECTORS_SINK_ORDERS_PLUGIN_CONFIG_TABLE_URI=file:///t/{topic}"})
	if got := sdk.Destination(s.Fields, raw, "orders", env); got != "file:///t/{topic}" {
		t.Errorf("Destination with override = %q", got)
	}
	// An older plugin marks no field.
	old := slices.Clone(s.Fields)
	for i := range old {
		old[i].Destination = false
	}
	if got := sdk.Destination(old, raw, "orders", sdk.Env{}); got != "" {
		t.Errorf("Destination without a marked field = %q", got)
	}
	js, _ := json.Marshal(s.Fields)
	if !strings.Contains(string(js), `"key":"table_uri","type":"template","default":null,"required":true,"non_empty":true,"secret":false,"description":"Where","destination":true`) {
		t.Errorf("describe()'s field lacks destination: %s", js)
	}
}

func TestDestinationDeclarationRefused(t *testing.T) {
	type two struct {
		A string `config:"a,destination" doc:"a"`
		B string `config:"b,destination" doc:"b"`
	}
	type secret struct {
		A string `config:"a,secret,destination" doc:"a"`
	}
	type notString struct {
		A int `config:"a,destination" doc:"a"`
	}
	if _, err := sdk.SchemaOf[two](); err == nil || !strings.Contains(err.Error(), "at most one") {
		t.Errorf("two destinations: %v", err)
	}
	if _, err := sdk.SchemaOf[secret](); err == nil {
		t.Error("a secret destination was accepted")
	}
	if _, err := sdk.SchemaOf[notString](); err == nil {
		t.Error("an int destination was accepted")
	}
}

func TestCommitsKeepsNewestPerTable(t *testing.T) {
	var cs sdk.Commits
	if l := cs.List(); l == nil || len(l) != 0 {
		t.Errorf("empty List = %#v", l)
	}
	v := func(n int64) *int64 { return &n }
	now := time.Now().UTC()
	cs.Set(sdk.Commit{Table: "b", Version: v(1), Records: 3, Time: now})
	cs.Set(sdk.Commit{Table: "a", Version: v(4), Records: 1, Time: now})
	cs.Set(sdk.Commit{Table: "b", Version: v(2), Records: 5, Time: now})
	got := cs.List()
	if len(got) != 2 || got[0].Table != "a" || got[1].Table != "b" || *got[1].Version != 2 || got[1].Records != 5 {
		t.Errorf("List = %+v", got)
	}
}
