package build_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/build"
	"github.com/picomq/heavy-sinks/connect/definition"
)

// upper is a fake Codec: the payload, upper-cased, as a JSON string.
type upper struct{ schema string }

func (u upper) AppendJSON(dst, payload []byte) ([]byte, error) {
	if len(payload) == 0 || payload[0] == '!' {
		return dst, errors.New("bad payload")
	}
	dst = append(dst, '"')
	dst = append(dst, strings.ToUpper(string(payload))...)
	return append(dst, '"'), nil
}

// regDecoder is a fake registry Decoder that keeps its Block.
type regDecoder struct{ b build.Block }

func (regDecoder) AppendJSON(_ context.Context, _ string, dst, _ []byte) ([]byte, error) {
	return append(dst, "{}"...), nil
}

func parse(t *testing.T, blocks string) *definition.Definition {
	t.Helper()
	d, err := definition.Parse("f.toml", []byte("type = \"sink\"\nkey = \"k\"\npath = \"p\"\n"+blocks))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var formats = build.Formats{
	definition.SchemaAvro: {
		Static: func(b build.Block) (decode.Codec, error) {
			if b.AvroSchema == `"bad"` {
				return nil, errors.New("not a schema this format takes")
			}
			return upper{b.AvroSchema}, nil
		},
		Registry: func(b build.Block) (decode.Decoder, error) { return regDecoder{b}, nil },
	},
}

// The blocks of a binary schema get their decoder, by block index: the
// schema file read, a Static decoder whose errors are record errors; a
// registry block its secrets from the environment. json blocks get none.
func TestDecoders(t *testing.T) {
	t.Setenv("SR", "alice:pa:ss")
	avsc := write(t, "s.avsc", `"string"`)
	d := parse(t, "[[topics]]\ntopics = [\"j\"]\nschema = \"json\"\n"+
		"[[topics]]\ntopics = [\"a\"]\nschema = \"avro\"\navro_schema_path = '"+avsc+"'\n"+
		"[[topics]]\ntopics = [\"r\"]\nschema = \"avro\"\nschema_registry_url = 'http://r:1'\nschema_registry_basic_auth_env = \"SR\"\n")
	decs, err := formats.Decoders(d, func(name string) string { return map[string]string{"SR": "alice:pa:ss"}[name] })
	if err != nil {
		t.Fatal(err)
	}
	if len(decs) != 2 || decs[1] != nil {
		t.Fatalf("decoders %v", decs)
	}
	out, err := decs[2].AppendJSON(context.Background(), "a", []byte("x"), []byte("hi"))
	if err != nil || string(out) != `x"HI"` {
		t.Errorf("static: %q %v", out, err)
	}
	if _, err := decs[2].AppendJSON(context.Background(), "a", nil, []byte("!")); !decode.IsRecordError(err) {
		t.Errorf("a static codec's error %v is not a record error", err)
	}
	if s, ok := decs[2].(decode.Static); !ok || s.Codec.(upper).schema != `"string"` {
		t.Errorf("static decoder %#v", decs[2])
	}
	r := decs[3].(regDecoder).b.Registry
	if r.User != "alice" || r.Password != "pa:ss" || r.URLs[0] != "http://r:1" || r.Timeout != definition.DefaultRegistryTimeout || r.TLS != nil {
		t.Errorf("registry %+v", r)
	}
}

// What cannot be built is refused naming the file, the block and the key:
// a schema the format refuses, a format this build lacks, a CA file with
// no certificate, a variable emptied since the definition was read.
func TestDecodersRefused(t *testing.T) {
	bad := write(t, "bad.avsc", `"bad"`)
	pem := write(t, "ca.pem", "not a certificate")
	bfbs := write(t, "s.bfbs", "x")
	for _, c := range []struct{ block, want string }{
		{"schema = \"avro\"\navro_schema_path = '" + bad + "'\n", "f.toml: topics[1].avro_schema_path: not a schema this format takes"},
		{"schema = \"avro\"\navro_schema_json = '\"bad\"'\n", "f.toml: topics[1].avro_schema_json: not a schema this format takes"},
		{"schema = \"flatbuffer\"\nflatbuffer_schema_path = '" + bfbs + "'\n", `f.toml: topics[1].schema: this build of picomq-connect does not decode schema "flatbuffer" from a schema file`},
		{"schema = \"proto\"\nschema_registry_url = 'http://r'\n", `f.toml: topics[1].schema_registry_url: this build of picomq-connect does not decode schema "proto" from a Schema Registry`},
		{"schema = \"avro\"\nschema_registry_url = 'https://r'\nschema_registry_ca_path = '" + pem + "'\n", "f.toml: topics[1].schema_registry_ca_path: " + pem + " holds no PEM certificate"},
		{"schema = \"avro\"\nschema_registry_url = 'https://r'\nschema_registry_bearer_token_env = \"SR_TOKEN\"\n", "f.toml: topics[1].schema_registry_bearer_token_env: environment variable SR_TOKEN is not set"},
	} {
		t.Setenv("SR_TOKEN", "t")
		d := parse(t, "[[topics]]\ntopics = [\"a\"]\n"+c.block)
		_, err := formats.Decoders(d, func(string) string { return "" })
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v\nwant %s", c.block, err, c.want)
		}
	}
}
