package preflight_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/build"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/preflight"
)

// --check builds each binary-format block's decoder as the start does: a
// schema its format refuses, and a format the build lacks, are problems
// naming the file, the block and the key; the registry's secret is looked
// up in the environment --check is given, never printed.
func TestCheckBuildsDecoders(t *testing.T) {
	t.Setenv("SR_AUTH", "alice:s3cret")
	d, err := definition.Parse("f.toml", []byte("type = \"sink\"\nkey = \"k\"\npath = \"/nonexistent/lib\"\n"+
		"[[topics]]\ntopics = [\"a\"]\nschema = \"avro\"\navro_schema_json = '\"bad\"'\n"+
		"[[topics]]\ntopics = [\"b\"]\nschema = \"avro\"\nschema_registry_url = 'http://r'\nschema_registry_basic_auth_env = \"SR_AUTH\"\n"+
		"[[topics]]\ntopics = [\"c\"]\nschema = \"proto\"\nschema_registry_url = 'http://r'\n"))
	if err != nil {
		t.Fatal(err)
	}
	var user, pass string
	formats := build.Formats{definition.SchemaAvro: {
		Static: func(build.Block) (decode.Codec, error) { return nil, errors.New("not an Avro schema") },
		Registry: func(b build.Block) (decode.Decoder, error) {
			user, pass = b.Registry.User, string(b.Registry.Password)
			return nil, errors.New("bad registry")
		},
	}}
	errs := preflight.Check(context.Background(), []*definition.Definition{d}, preflight.Options{
		Host: "/nonexistent/picomq-host", Environ: []string{"SR_AUTH=bob:hunter2"}, Formats: formats,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var all []string
	for _, e := range errs {
		all = append(all, e.Error())
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{
		"f.toml: topics[1].avro_schema_json: not an Avro schema",
		"f.toml: topics[2].schema_registry_url: bad registry",
		`f.toml: topics[3].schema_registry_url: this build of picomq-connect does not decode schema "proto" from a Schema Registry`,
		`f.toml: path "/nonexistent/lib"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("problems\n%s\nlack %q", text, want)
		}
	}
	if user != "bob" || pass != "hunter2" {
		t.Errorf("the registry's credentials are not those of --check's environment (user %q)", user)
	}
	if strings.Contains(text, "hunter2") || strings.Contains(text, "s3cret") {
		t.Errorf("a secret printed:\n%s", text)
	}
}
