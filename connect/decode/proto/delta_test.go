package protodec_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode/decodetest"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
)

// The JSON each vector decodes to has the type the message declares.
func TestValueSchemaFitsVectors(t *testing.T) {
	var vectors []vector
	readJSON(t, "vectors.json", &vectors)
	set := descriptorSet(t)
	for _, v := range vectors {
		c, err := protodec.FromDescriptorSet(set, v.Message)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.AppendJSON(nil, v.Payload)
		if err != nil {
			continue // an error vector
		}
		if err := decodetest.Fits(c.ValueSchema(), got); err != nil {
			t.Errorf("%s: %v\nschema %s\njson   %s", v.Name, err, c.ValueSchema(), got)
		}
	}
}

func TestValueSchema(t *testing.T) {
	c, err := protodec.FromDescriptorSet(descriptorSet(t), "shop.v1.PageView")
	if err != nil {
		t.Fatal(err)
	}
	f := func(name, typ string, null bool) string {
		n := "false"
		if null {
			n = "true"
		}
		return `{"name":"` + name + `","type":` + typ + `,"nullable":` + n + `,"metadata":{}}`
	}
	want := `{"type":"struct","fields":[` + f("event_id", `"string"`, false) + "," + f("user_id", `"long"`, false) + "," +
		f("session_id", `"string"`, false) + "," + f("ts", `"timestamp"`, true) + "," + f("url", `"string"`, false) + "," +
		f("referrer", `"string"`, false) + "," + f("http_status", `"integer"`, false) + "," + f("duration_ms", `"double"`, false) + "," +
		f("mobile", `"boolean"`, false) + "," + f("country", `"string"`, false) + "," + f("status", `"string"`, false) + "," +
		f("tags", `{"type":"array","elementType":"string","containsNull":false}`, false) + `]}`
	if got := string(c.ValueSchema()); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
