package definition

import (
	"encoding/json"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// schemaChecks are the checks of a block's binary-format keys (avro,
// proto, flatbuffer and the Schema Registry) and how they relate: which
// key needs which schema, which keys need each other, that the files
// named can be read and the environment variables named are set, now, at
// start. They fill t's fields; apply runs them key by key after the
// declared checks (keys.go).
func schemaChecks(r *rawTopic, t *Topic) map[string]func(report) {
	schema := func() Schema {
		if r.Schema == nil {
			return ""
		}
		return Schema(*r.Schema)
	}
	registry := r.SchemaRegistryURL != nil
	// only refuses a key set with another schema than those given.
	only := func(errorf report, set bool, schemas ...Schema) bool {
		if !set {
			return false
		}
		if !slices.Contains(schemas, schema()) {
			var q []string
			for _, s := range schemas {
				q = append(q, `schema = "`+string(s)+`"`)
			}
			errorf("applies only with %s", strings.Join(q, " or "))
			return false
		}
		return true
	}
	needsRegistry := func(errorf report, set bool) bool {
		if set && !registry {
			errorf("applies only with schema_registry_url")
			return false
		}
		return set
	}
	return map[string]func(report){
		"schema": func(errorf report) {
			t.Schema = schema()
			var missing []string
			switch t.Schema {
			case SchemaAvro:
				if !registry && r.AvroSchemaJSON == nil && r.AvroSchemaPath == nil {
					errorf(`schema "avro" needs avro_schema_json or avro_schema_path, or schema_registry_url`)
				}
			case SchemaProto:
				if !registry {
					if r.ProtoDescriptorSetPath == nil {
						missing = append(missing, "proto_descriptor_set_path")
					}
					if r.ProtoMessage == nil {
						missing = append(missing, "proto_message")
					}
				}
				if len(missing) > 0 {
					errorf(`schema "proto" needs %s, or schema_registry_url`, strings.Join(missing, " and "))
				}
			case SchemaFlatbuffer:
				if r.FlatbufferSchemaPath == nil {
					errorf(`schema "flatbuffer" needs flatbuffer_schema_path`)
				}
			}
		},
		"avro_schema_json": func(errorf report) {
			if !only(errorf, r.AvroSchemaJSON != nil, SchemaAvro) {
				return
			}
			switch s := *r.AvroSchemaJSON; {
			case r.AvroSchemaPath != nil:
				errorf("set together with avro_schema_path; keep one")
			case strings.TrimSpace(s) == "":
				errorf("empty")
			case !json.Valid([]byte(s)):
				errorf("not JSON: an Avro schema is a JSON string, object or array")
			default:
				t.AvroSchemaJSON = s
			}
		},
		"avro_schema_path": func(errorf report) {
			if only(errorf, r.AvroSchemaPath != nil, SchemaAvro) && readable(errorf, *r.AvroSchemaPath) {
				t.AvroSchemaPath = *r.AvroSchemaPath
			}
		},
		"proto_descriptor_set_path": func(errorf report) {
			switch {
			case !only(errorf, r.ProtoDescriptorSetPath != nil, SchemaProto):
			case registry:
				errorf("not with schema_registry_url: the message comes from each record's schema id and message indexes")
			case readable(errorf, *r.ProtoDescriptorSetPath):
				t.ProtoDescriptorSetPath = *r.ProtoDescriptorSetPath
			}
		},
		"proto_message": func(errorf report) {
			switch {
			case !only(errorf, r.ProtoMessage != nil, SchemaProto):
			case registry:
				errorf("not with schema_registry_url: the message comes from each record's schema id and message indexes")
			case !fullNameRE.MatchString(*r.ProtoMessage):
				errorf("%q: want a message's full name, such as \"shop.v1.Order\"", *r.ProtoMessage)
			default:
				t.ProtoMessage = strings.TrimPrefix(*r.ProtoMessage, ".")
			}
		},
		"flatbuffer_schema_path": func(errorf report) {
			if only(errorf, r.FlatbufferSchemaPath != nil, SchemaFlatbuffer) && readable(errorf, *r.FlatbufferSchemaPath) {
				t.FlatbufferSchemaPath = *r.FlatbufferSchemaPath
			}
		},
		"flatbuffer_root_type": func(errorf report) {
			switch {
			case !only(errorf, r.FlatbufferRootType != nil, SchemaFlatbuffer):
			case !fullNameRE.MatchString(*r.FlatbufferRootType):
				errorf("%q: want a table's full name, such as \"shop.Order\"", *r.FlatbufferRootType)
			default:
				t.FlatbufferRootType = strings.TrimPrefix(*r.FlatbufferRootType, ".")
			}
		},
		"schema_registry_url": func(errorf report) {
			if !registry {
				return
			}
			if schema() == SchemaFlatbuffer {
				errorf(`FlatBuffers has no Schema Registry format: give flatbuffer_schema_path only`)
				return
			}
			if !only(errorf, true, SchemaAvro, SchemaProto) {
				return
			}
			reg := &Registry{Timeout: DefaultRegistryTimeout}
			// A refused URL that may hold a password (user info, which an
			// '@' marks even where the URL does not parse as such) is named
			// by its position or without it.
			urls := strings.Split(*r.SchemaRegistryURL, ",")
			for i, s := range urls {
				s = strings.TrimSpace(s)
				u, err := url.Parse(s)
				switch {
				case s == "":
					errorf("an empty URL")
				case err != nil:
					errorf("URL %d of %d does not parse (it is not shown: it may hold credentials)", i+1, len(urls))
				case u.User != nil:
					u.User = nil
					errorf("%q: credentials in the URL; name an environment variable in schema_registry_basic_auth_env instead", u.Redacted())
				case (u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "") && strings.Contains(s, "@"):
					errorf("URL %d of %d: want an http:// or https:// URL with a host (it is not shown: it may hold credentials)", i+1, len(urls))
				case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
					errorf("%q: want an http:// or https:// URL", s)
				default:
					reg.URLs = append(reg.URLs, s)
				}
			}
			t.Registry = reg
		},
		"schema_registry_basic_auth_env": func(errorf report) {
			if !needsRegistry(errorf, r.SchemaRegistryBasicAuthEnv != nil) {
				return
			}
			name := *r.SchemaRegistryBasicAuthEnv
			if v, ok := env(errorf, name); ok {
				if !strings.Contains(v, ":") {
					errorf("environment variable %s does not hold user:password", name)
				} else if t.Registry != nil {
					t.Registry.BasicAuthEnv = name
				}
			}
		},
		"schema_registry_bearer_token_env": func(errorf report) {
			if !needsRegistry(errorf, r.SchemaRegistryBearerTokenEnv != nil) {
				return
			}
			if r.SchemaRegistryBasicAuthEnv != nil {
				errorf("set together with schema_registry_basic_auth_env; keep one")
				return
			}
			if _, ok := env(errorf, *r.SchemaRegistryBearerTokenEnv); ok && t.Registry != nil {
				t.Registry.BearerTokenEnv = *r.SchemaRegistryBearerTokenEnv
			}
		},
		"schema_registry_ca_path": func(errorf report) {
			if !needsRegistry(errorf, r.SchemaRegistryCAPath != nil) || !readable(errorf, *r.SchemaRegistryCAPath) {
				return
			}
			if !strings.Contains(*r.SchemaRegistryURL, "https://") {
				errorf("set but no schema_registry_url is https")
				return
			}
			if t.Registry != nil {
				t.Registry.CAPath = *r.SchemaRegistryCAPath
			}
		},
		"schema_registry_timeout": func(errorf report) {
			if needsRegistry(errorf, r.SchemaRegistryTimeout != nil) && t.Registry != nil {
				t.Registry.Timeout = time.Duration(*r.SchemaRegistryTimeout)
			}
		},
	}
}

// fullNameRE is a Protobuf message's or a FlatBuffers table's full name,
// with or without the leading dot.
var fullNameRE = regexp.MustCompile(`^\.?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// envNameRE is a portable environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// readable reports whether the file at path can be read now, saying why
// not: a schema file that is missing is found at start, not at the first
// record.
func readable(errorf report, path string) bool {
	f, err := os.Open(path)
	if err != nil {
		errorf("%v", err)
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		errorf("%v", err)
		return false
	case st.IsDir():
		errorf("%q is a directory, not a file", path)
		return false
	}
	return true
}

// env returns the value of the environment variable name, saying so when
// it is not a valid name or not set (empty counts as not set). The value
// is never part of a message.
func env(errorf report, name string) (string, bool) {
	if !envNameRE.MatchString(name) {
		errorf("%q: want the name of an environment variable, such as \"SR_AUTH\"", name)
		return "", false
	}
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		errorf("environment variable %s is not set", name)
		return "", false
	}
	return v, true
}
