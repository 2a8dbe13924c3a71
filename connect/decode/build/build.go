package build

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
)

// Block is what a format needs to build one block's decoder: the block's
// schema keys with the files read and the secrets looked up.
type Block struct {
	File   string // the definition file, for messages
	Index  int    // the [[topics]] block, 1-based
	Schema definition.Schema
	// AvroSchema is avro_schema_json, or the content of avro_schema_path;
	// "" when neither. Without a registry it is the writer schema of
	// every payload; with one, the reader schema (optional).
	AvroSchema string
	// ProtoDescriptorSet is the content of proto_descriptor_set_path (a
	// serialized FileDescriptorSet), ProtoMessage the message's full name;
	// both empty with a registry.
	ProtoDescriptorSet []byte
	ProtoMessage       string
	// FlatbufferSchema is the content of flatbuffer_schema_path (.bfbs);
	// FlatbufferRootType "" for the schema's root_type.
	FlatbufferSchema   []byte
	FlatbufferRootType string
	// Registry is the block's Schema Registry; nil without one.
	Registry *Registry
}

// Registry is how to reach a block's Schema Registry.
type Registry struct {
	URLs []string
	// User and Password are basic auth (schema_registry_basic_auth_env),
	// BearerToken schema_registry_bearer_token_env; empty when not set.
	User        string
	Password    definition.Secret
	BearerToken definition.Secret
	// TLS trusts schema_registry_ca_path's CAs; nil for the system roots.
	TLS     *tls.Config
	Timeout time.Duration // per request
}

// Format builds the decoders of one schema.
type Format struct {
	// Static compiles the schema the block gives in its definition (no
	// registry): every payload is decoded with the one Codec. Nil: the
	// format needs a registry.
	Static func(Block) (decode.Codec, error)
	// Registry makes the decoder of a block with schema_registry_url:
	// payloads in the Confluent wire format, schemas fetched by id. It
	// must not wait for the registry (the first record does). Nil: the
	// format takes no registry.
	Registry func(Block) (decode.Decoder, error)
}

// Formats are the binary schemas a build of the runtime decodes.
type Formats map[definition.Schema]Format

// Decoders builds the decoder of every block of d whose schema is binary
// (definition.Schema.Binary), keyed by the block's Index; getenv looks up
// the registry's secrets (os.Getenv). Every problem of every block is
// returned, each naming the file, the block and the key.
func (f Formats) Decoders(d *definition.Definition, getenv func(string) string) (map[int]decode.Decoder, error) {
	out := map[int]decode.Decoder{}
	var errs []error
	for _, t := range d.Topics {
		if !t.Schema.Binary() {
			continue
		}
		dec, err := f.decoder(d.File, &t, getenv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[t.Index] = dec
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func (f Formats) decoder(file string, t *definition.Topic, getenv func(string) string) (decode.Decoder, error) {
	refuse := func(key, format string, args ...any) error {
		return &definition.Error{File: file, Key: "topics[" + strconv.Itoa(t.Index) + "]." + key, Msg: fmt.Sprintf(format, args...)}
	}
	format, ok := f[t.Schema]
	b, key, err := read(file, t, getenv)
	switch {
	case err != nil:
		return nil, refuse(key, "%v", err)
	case t.Registry != nil && (!ok || format.Registry == nil):
		return nil, refuse("schema_registry_url", "this build of picomq-connect does not decode schema %q from a Schema Registry", t.Schema)
	case t.Registry != nil:
		dec, err := format.Registry(b)
		if err != nil {
			return nil, refuse("schema_registry_url", "%v", err)
		}
		return dec, nil
	case !ok || format.Static == nil:
		return nil, refuse("schema", "this build of picomq-connect does not decode schema %q from a schema file", t.Schema)
	}
	codec, err := format.Static(b)
	if err != nil {
		return nil, refuse(schemaKey(t), "%v", err)
	}
	return decode.Static{Codec: codec}, nil
}

// schemaKey is the key that names the schema of a block without registry.
func schemaKey(t *definition.Topic) string {
	switch {
	case t.AvroSchemaPath != "":
		return "avro_schema_path"
	case t.AvroSchemaJSON != "":
		return "avro_schema_json"
	case t.ProtoDescriptorSetPath != "":
		return "proto_descriptor_set_path"
	case t.FlatbufferSchemaPath != "":
		return "flatbuffer_schema_path"
	}
	return "schema"
}

// read makes t's Block: the files read, the secrets looked up. On an
// error it also returns the key at fault.
func read(file string, t *definition.Topic, getenv func(string) string) (Block, string, error) {
	b := Block{File: file, Index: t.Index, Schema: t.Schema, AvroSchema: t.AvroSchemaJSON, ProtoMessage: t.ProtoMessage,
		FlatbufferRootType: t.FlatbufferRootType}
	for _, f := range []struct {
		key, path string
		to        *[]byte
	}{{"avro_schema_path", t.AvroSchemaPath, nil}, {"proto_descriptor_set_path", t.ProtoDescriptorSetPath, &b.ProtoDescriptorSet},
		{"flatbuffer_schema_path", t.FlatbufferSchemaPath, &b.FlatbufferSchema}} {
		if f.path == "" {
			continue
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			return b, f.key, err
		}
		if f.to == nil {
			b.AvroSchema = string(data)
		} else {
			*f.to = data
		}
	}
	r := t.Registry
	if r == nil {
		return b, "", nil
	}
	b.Registry = &Registry{URLs: r.URLs, Timeout: r.Timeout}
	if r.BasicAuthEnv != "" {
		// The definition checked the form; the value may have changed
		// since, so it is checked again, never printed.
		user, pass, ok := strings.Cut(getenv(r.BasicAuthEnv), ":")
		if !ok {
			return b, "schema_registry_basic_auth_env", fmt.Errorf("environment variable %s does not hold user:password", r.BasicAuthEnv)
		}
		b.Registry.User, b.Registry.Password = user, definition.Secret(pass)
	}
	if r.BearerTokenEnv != "" {
		tok := getenv(r.BearerTokenEnv)
		if tok == "" {
			return b, "schema_registry_bearer_token_env", fmt.Errorf("environment variable %s is not set", r.BearerTokenEnv)
		}
		b.Registry.BearerToken = definition.Secret(tok)
	}
	if r.CAPath != "" {
		pem, err := os.ReadFile(r.CAPath)
		if err != nil {
			return b, "schema_registry_ca_path", err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return b, "schema_registry_ca_path", fmt.Errorf("%s holds no PEM certificate", r.CAPath)
		}
		b.Registry.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return b, "", nil
}
