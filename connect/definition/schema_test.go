package definition_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// schemaFiles writes a schema file and returns its path and a directory.
func schemaFiles(t *testing.T) (file, dir string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "s.bin")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, dir
}

func block(lines string) []byte {
	return []byte("type = \"sink\"\nkey = \"k\"\npath = \"p\"\n[[topics]]\ntopics = [\"a\"]\n" + lines)
}

// Each binary format with the keys it takes: parsed into the block, the
// registry's URLs split, the secrets kept as the variables' names.
func TestBinarySchemas(t *testing.T) {
	file, _ := schemaFiles(t)
	t.Setenv("SR_AUTH", "alice:s3cret")
	t.Setenv("SR_TOKEN", "tok3n")
	for _, c := range []struct {
		name, doc string
		check     func(definition.Topic) bool
	}{
		{"avro inline", "schema = \"avro\"\navro_schema_json = '{\"type\":\"long\"}'\n", func(tp definition.Topic) bool {
			return tp.AvroSchemaJSON == `{"type":"long"}` && tp.Registry == nil && tp.Schema.Binary()
		}},
		{"avro file", "schema = \"avro\"\navro_schema_path = '" + file + "'\n", func(tp definition.Topic) bool { return tp.AvroSchemaPath == file }},
		{"avro registry", "schema = \"avro\"\nschema_registry_url = 'https://a:8081/, http://b'\nschema_registry_basic_auth_env = \"SR_AUTH\"\n" +
			"schema_registry_ca_path = '" + file + "'\nschema_registry_timeout = \"3s\"\n", func(tp definition.Topic) bool {
			r := tp.Registry
			return r != nil && slices.Equal(r.URLs, []string{"https://a:8081/", "http://b"}) && r.BasicAuthEnv == "SR_AUTH" &&
				r.CAPath == file && r.Timeout == 3*time.Second && tp.AvroSchemaJSON == ""
		}},
		{"avro registry with a reader schema", "schema = \"avro\"\nschema_registry_url = 'http://r'\navro_schema_json = '\"long\"'\n", func(tp definition.Topic) bool {
			return tp.Registry != nil && tp.Registry.Timeout == definition.DefaultRegistryTimeout && tp.AvroSchemaJSON == `"long"`
		}},
		{"proto file", "schema = \"proto\"\nproto_descriptor_set_path = '" + file + "'\nproto_message = \".shop.v1.Order\"\n", func(tp definition.Topic) bool {
			return tp.ProtoDescriptorSetPath == file && tp.ProtoMessage == "shop.v1.Order"
		}},
		{"proto registry", "schema = \"proto\"\nschema_registry_url = 'http://r'\nschema_registry_bearer_token_env = \"SR_TOKEN\"\n", func(tp definition.Topic) bool {
			return tp.Registry != nil && tp.Registry.BearerTokenEnv == "SR_TOKEN" && tp.Registry.BasicAuthEnv == ""
		}},
		{"flatbuffer", "schema = \"flatbuffer\"\nflatbuffer_schema_path = '" + file + "'\nflatbuffer_root_type = \"shop.Order\"\n", func(tp definition.Topic) bool {
			return tp.FlatbufferSchemaPath == file && tp.FlatbufferRootType == "shop.Order" && tp.Registry == nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := definition.Parse("f.toml", block(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if tp := d.Topics[0]; !c.check(tp) {
				t.Errorf("%+v %+v", tp, tp.Registry)
			}
		})
	}
}

// Every refusal of the binary-format keys, with its line and key.
func TestBinarySchemaRefusals(t *testing.T) {
	file, dir := schemaFiles(t)
	t.Setenv("SR_AUTH", "alice:s3cret")
	t.Setenv("SR_NOCOLON", "s3cret")
	t.Setenv("SR_EMPTY", "")
	reg := "schema_registry_url = 'http://r'\n"
	for _, c := range []struct{ name, doc, want string }{
		{"avro json and path", "schema = \"avro\"\navro_schema_json = '\"long\"'\navro_schema_path = '" + file + "'\n",
			"f.toml:7:1: topics[1].avro_schema_json: set together with avro_schema_path; keep one"},
		{"avro json empty", "schema = \"avro\"\navro_schema_json = ' '\n", "f.toml:7:1: topics[1].avro_schema_json: empty"},
		{"avro json not json", "schema = \"avro\"\navro_schema_json = '{\"type\":'\n", "topics[1].avro_schema_json: not JSON"},
		{"avro path missing", "schema = \"avro\"\navro_schema_path = '" + dir + "/nope.avsc'\n",
			"f.toml:7:1: topics[1].avro_schema_path: open " + dir + "/nope.avsc: no such file or directory"},
		{"avro path a directory", "schema = \"avro\"\navro_schema_path = '" + dir + "'\n", "is a directory, not a file"},
		{"avro key with proto", "schema = \"proto\"\n" + reg + "avro_schema_path = '" + file + "'\n", `topics[1].avro_schema_path: applies only with schema = "avro"`},
		{"proto message only", "schema = \"proto\"\nproto_message = \"a.B\"\n", `topics[1].schema: schema "proto" needs proto_descriptor_set_path, or schema_registry_url`},
		{"proto set only", "schema = \"proto\"\nproto_descriptor_set_path = '" + file + "'\n", `schema "proto" needs proto_message, or schema_registry_url`},
		{"proto set with registry", "schema = \"proto\"\n" + reg + "proto_descriptor_set_path = '" + file + "'\n",
			"topics[1].proto_descriptor_set_path: not with schema_registry_url"},
		{"proto message with registry", "schema = \"proto\"\n" + reg + "proto_message = \"a.B\"\n", "topics[1].proto_message: not with schema_registry_url"},
		{"proto message name", "schema = \"proto\"\nproto_descriptor_set_path = '" + file + "'\nproto_message = \"a..B\"\n", `topics[1].proto_message: "a..B": want a message's full name`},
		{"proto set missing", "schema = \"proto\"\nproto_descriptor_set_path = 'nope.pb'\nproto_message = \"a.B\"\n", "topics[1].proto_descriptor_set_path: open nope.pb: no such file"},
		{"flatbuffer without schema", "schema = \"flatbuffer\"\n", `topics[1].schema: schema "flatbuffer" needs flatbuffer_schema_path`},
		{"flatbuffer with registry", "schema = \"flatbuffer\"\nflatbuffer_schema_path = '" + file + "'\n" + reg,
			"f.toml:8:1: topics[1].schema_registry_url: FlatBuffers has no Schema Registry format"},
		{"flatbuffer root type name", "schema = \"flatbuffer\"\nflatbuffer_schema_path = '" + file + "'\nflatbuffer_root_type = \"1x\"\n", `topics[1].flatbuffer_root_type: "1x": want a table's full name`},
		{"root type with avro", "schema = \"avro\"\n" + reg + "flatbuffer_root_type = \"a.B\"\n", `topics[1].flatbuffer_root_type: applies only with schema = "flatbuffer"`},
		{"registry with json", "schema = \"json\"\n" + reg, `f.toml:7:1: topics[1].schema_registry_url: applies only with schema = "avro" or schema = "proto"`},
		{"registry url scheme", "schema = \"avro\"\nschema_registry_url = 'ftp://r'\n", `topics[1].schema_registry_url: "ftp://r": want an http:// or https:// URL`},
		{"registry url empty entry", "schema = \"avro\"\nschema_registry_url = 'http://r,'\n", `topics[1].schema_registry_url: an empty URL`},
		{"registry url credentials", "schema = \"avro\"\nschema_registry_url = 'http://bob:hunter2@r'\n",
			`topics[1].schema_registry_url: "http://r": credentials in the URL; name an environment variable in schema_registry_basic_auth_env instead`},
		{"auth without registry", "schema = \"avro\"\navro_schema_json = '\"long\"'\nschema_registry_basic_auth_env = \"SR_AUTH\"\n",
			"topics[1].schema_registry_basic_auth_env: applies only with schema_registry_url"},
		{"auth env unset", "schema = \"avro\"\n" + reg + "schema_registry_basic_auth_env = \"SR_NOT_THERE\"\n",
			"f.toml:8:1: topics[1].schema_registry_basic_auth_env: environment variable SR_NOT_THERE is not set"},
		{"auth env empty", "schema = \"avro\"\n" + reg + "schema_registry_basic_auth_env = \"SR_EMPTY\"\n", "environment variable SR_EMPTY is not set"},
		{"auth env form", "schema = \"avro\"\n" + reg + "schema_registry_basic_auth_env = \"SR_NOCOLON\"\n", "environment variable SR_NOCOLON does not hold user:password"},
		{"auth env name", "schema = \"avro\"\n" + reg + "schema_registry_basic_auth_env = \"SR-AUTH\"\n", `"SR-AUTH": want the name of an environment variable`},
		{"bearer and basic", "schema = \"avro\"\n" + reg + "schema_registry_basic_auth_env = \"SR_AUTH\"\nschema_registry_bearer_token_env = \"SR_AUTH\"\n",
			"f.toml:9:1: topics[1].schema_registry_bearer_token_env: set together with schema_registry_basic_auth_env; keep one"},
		{"bearer unset", "schema = \"proto\"\n" + reg + "schema_registry_bearer_token_env = \"SR_NOT_THERE\"\n", "environment variable SR_NOT_THERE is not set"},
		{"ca over http", "schema = \"avro\"\n" + reg + "schema_registry_ca_path = '" + file + "'\n", "topics[1].schema_registry_ca_path: set but no schema_registry_url is https"},
		{"ca missing", "schema = \"avro\"\nschema_registry_url = 'https://r'\nschema_registry_ca_path = 'nope.pem'\n", "topics[1].schema_registry_ca_path: open nope.pem"},
		{"timeout without registry", "schema = \"avro\"\navro_schema_json = '\"long\"'\nschema_registry_timeout = \"1s\"\n", "topics[1].schema_registry_timeout: applies only with schema_registry_url"},
		{"timeout zero", "schema = \"avro\"\n" + reg + "schema_registry_timeout = \"0s\"\n", "must be above zero"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := definition.Parse("f.toml", block(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, c.want)
			}
			for _, secret := range []string{"s3cret", "hunter2"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("a secret in the error: %v", err)
				}
			}
		})
	}
}

// A block printed shows the variables' names, never their values.
func TestRegistrySecretsNotPrinted(t *testing.T) {
	t.Setenv("SR_AUTH", "alice:s3cret")
	d, err := definition.Parse("f.toml", block("schema = \"avro\"\nschema_registry_url = 'http://r'\nschema_registry_basic_auth_env = \"SR_AUTH\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmtV(d.Topics[0]), fmtGo(d.Topics[0]), fmtV(*d.Topics[0].Registry), fmtGo(d.Topics[0].Registry)} {
		if strings.Contains(s, "s3cret") || strings.Contains(s, "alice") {
			t.Errorf("printed: %s", s)
		}
	}
	if !strings.Contains(fmtV(*d.Topics[0].Registry), "SR_AUTH") {
		t.Error("the variable's name is not shown")
	}
}

// A URL that is refused for its form never shows its password either:
// the form checks come before the credentials check, so each message
// names the URL without its user info.
func TestRegistryURLRefusalsHideCredentials(t *testing.T) {
	for _, u := range []string{"ftp://bob:hunter2@r", "htps://bob:hunter2@r:8081", "https://bob:hunter2%zz@r", "https://bob:hunter2@", "bob:hunter2@r"} {
		_, err := definition.Parse("f.toml", block("schema = \"avro\"\nschema_registry_url = '"+u+"'\n"))
		if err == nil {
			t.Errorf("%s: accepted", u)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the password is in the error: %v", err)
		}
	}
}
