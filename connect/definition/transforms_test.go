package definition_test

import (
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/transform"
)

const xfHead = "type = \"sink\"\nkey = \"k\"\npath = \"p\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n"

// TestTransforms: the tables of a block compile into one chain, run in
// the order written, each table with its own keys; a block after them is
// its own.
func TestTransforms(t *testing.T) {
	doc := xfHead + `
[[topics.transforms]]
type = "unwrap_envelope"
field = "after"

[[topics.transforms]]
type = "filter_records"
field = "status"
in = ["paid", 3, true]

[[topics.transforms]]
type = "add_fields"
fields = [
  { name = "src", value = "shop" },
  { name = "at", compute = "timestamp_rfc3339" },
  { name = "trace", header = "trace-id" },
]

[[topics.transforms]]
type = "update_fields"
field = "id"
rename_to = "order_id"

[topics.properties]
"client.id" = "me"

[[topics]]
topics = ["b"]
schema = "raw"
`
	d, err := definition.Parse("f.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := d.Topics[0].Transforms
	if c == nil || c.Len() != 4 || d.Topics[1].Transforms != nil || d.Topics[0].Client.ClientID != "me" {
		t.Fatalf("chain %v, block 2 %v", c, d.Topics[1].Transforms)
	}
	m := transform.Meta{Timestamp: time.UnixMilli(0), Headers: []transform.Header{{Key: "trace-id", Value: []byte("t")}}}
	out, keep, err := c.Apply(nil, []byte(`{"after":{"id":1,"status":"paid"}}`), &m)
	if want := `{"order_id":1,"status":"paid","src":"shop","at":"1970-01-01T00:00:00.000Z","trace":"t"}`; err != nil || !keep || string(out) != want {
		t.Fatalf("got %s %v %v, want %s", out, keep, err, want)
	}
	if _, keep, _ := c.Apply(nil, []byte(`{"after":{"id":1,"status":"new"}}`), &m); keep {
		t.Fatal("a status not in the list was kept")
	}
}

// Each refusal of a transform names the file, the line of its table (or
// of its key) and the key, block and table numbered.
func TestTransformsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown type", xfHead + "[[topics.transforms]]\ntype = \"mask\"\n",
			`f.toml:8:1: topics[1].transforms[1].type: unknown transform type "mask" (add_fields, delete_fields, update_fields, filter_fields, filter_records or unwrap_envelope)`},
		{"missing type", xfHead + "[[topics.transforms]]\nfield = \"a\"\n", "f.toml:7:3: topics[1].transforms[1].type: missing: add_fields"},
		{"unknown key", xfHead + "[[topics.transforms]]\ntype = \"delete_fields\"\npath = [\"a\"]\n", "f.toml:9:1: topics.transforms.path: unknown key"},
		{"key of another type", xfHead + "[[topics.transforms]]\ntype = \"delete_fields\"\npaths = [\"a\"]\n[[topics.transforms]]\ntype = \"delete_fields\"\npaths = [\"a\"]\non_null = \"drop\"\n",
			`f.toml:13:1: topics[1].transforms[2].on_null: does not apply to type = "delete_fields"`},
		{"bad value", xfHead + "[[topics.transforms]]\ntype = \"unwrap_envelope\"\nfield = \"a\"\non_null = \"skip\"\n",
			`f.toml:10:1: topics[1].transforms[1].on_null: "skip": want drop or error`},
		{"bad compute", xfHead + "[[topics.transforms]]\ntype = \"add_fields\"\nfields = [{ name = \"a\", compute = \"now\" }]\n",
			`f.toml:9:1: topics[1].transforms[1].fields[1].compute: compute "now": want timestamp_ms, timestamp_rfc3339`},
		{"two sources", xfHead + "[[topics.transforms]]\ntype = \"add_fields\"\nfields = [{ name = \"a\", value = 1, header = \"h\" }]\n",
			`f.toml:9:1: topics[1].transforms[1].fields[1]: set exactly one of value, compute and header`},
		{"raw schema", strings.Replace(xfHead, "json", "raw", 1) + "[[topics.transforms]]\ntype = \"delete_fields\"\npaths = [\"a\"]\n",
			`f.toml:7:3: topics[1].transforms: transforms act on JSON objects; schema = "raw"`},
		{"text schema", strings.Replace(xfHead, "json", "text", 1) + "[[topics.transforms]]\ntype = \"delete_fields\"\npaths = [\"a\"]\n",
			`schema = "text" payloads are not decoded to JSON`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := definition.Parse("f.toml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// The values declared for type and compute are the transform package's.
func TestTransformValuesDeclared(t *testing.T) {
	md := definition.Markdown()
	for _, ty := range transform.Types {
		if !strings.Contains(md, "`"+string(ty)+"`") {
			t.Errorf("type %s is not declared", ty)
		}
	}
	for _, c := range transform.Computes {
		if !strings.Contains(md, "`"+c+"`") {
			t.Errorf("compute %s is not declared", c)
		}
	}
}
