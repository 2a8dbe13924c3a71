package protodec_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
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

// A registry schema describes each payload by the message its indexes
// name: the JSON of every registry vector fits it, and it is the
// descriptor set's value schema of the same message.
func TestPayloadSchemaFitsRegistryVectors(t *testing.T) {
	var reg registryFile
	readJSON(t, "registry.json", &reg)
	c, err := protodec.FromSchema(reg.Schema, reg.Refs)
	if err != nil {
		t.Fatal(err)
	}
	messages := map[string]bool{}
	topLevel := map[string]string{"order_[0]": "shop.v1.Order", "refund_[1]": "shop.v1.Refund", "pageview_[2]": "shop.v1.PageView"}
	compared := 0
	for _, v := range reg.Vectors {
		got, err := c.AppendJSON(nil, v.Payload)
		if err != nil {
			t.Fatal(err)
		}
		s := c.PayloadSchema(v.Payload)
		if err := decodetest.Fits(s, got); err != nil {
			t.Errorf("%s: %v\nschema %s\njson   %s", v.Name, err, s, got)
		}
		if name, ok := topLevel[v.Name]; ok {
			compared++
			m, err := protodec.FromDescriptorSet(descriptorSet(t), name)
			if err != nil || string(m.ValueSchema()) != string(s) {
				t.Errorf("%s: registry schema %s, descriptor set's %s", v.Name, s, m.ValueSchema())
			}
		}
		messages[string(s)] = true
	}
	if compared != len(topLevel) || len(messages) < 4 {
		t.Fatalf("%d compared, %d distinct message types described over %d vectors", compared, len(messages), len(reg.Vectors))
	}
	if s := c.PayloadSchema([]byte{0x7f}); s != nil {
		t.Fatalf("bad message indexes described: %s", s)
	}
}

// A float is described as a double: a later version of the schema may make
// the field a double (a compatible change), and a float column would round
// its values; every float32 is exact in a double.
func TestValueSchemaFloatIsDouble(t *testing.T) {
	c, err := protodec.FromDescriptorSet(descriptorSet(t), "shop.v1.Order")
	if err != nil {
		t.Fatal(err)
	}
	st, err := decode.ParseSchema(c.ValueSchema())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range st.Fields {
		if f.Name == "fl" {
			if f.Type.Name != "double" {
				t.Fatalf("float field fl described as %q, want double", f.Type.Name)
			}
			return
		}
	}
	t.Fatalf("no field fl in %s", c.ValueSchema())
}
