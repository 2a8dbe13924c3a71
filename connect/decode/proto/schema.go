package protodec

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Schema decodes the Protobuf payloads of one Schema Registry schema: the
// Confluent wire format's remainder after the magic byte and the schema id,
// that is the message indexes naming the payload's message in the schema's
// file, then the message's bytes (see indexes.go).
type Schema struct {
	file    protoreflect.FileDescriptor
	enc     *encoder
	schemas sync.Map // protoreflect.MessageDescriptor -> []byte: PayloadSchema's (delta.go)
}

// FromSchema compiles a registry schema: text is the schema's .proto file
// and refs its references, import path to .proto text, transitively
// resolved by the caller. The well-known types (google/protobuf/*.proto),
// Google's common types (google/type/*.proto) and Confluent's
// confluent/meta.proto and confluent/type/decimal.proto need no reference:
// Confluent's serializers do not register them (skip.known.types), and
// they are built in (builtin.go).
//
// A schema or reference may also be a base64-encoded FileDescriptorProto
// (the "serialized" form): Confluent's Python serializer registers that
// form, and a registry that does not convert it to text (its own mock,
// some compatible registries) returns it as such.
func FromSchema(text string, refs map[string]string) (*Schema, error) {
	main := mainFileName(refs)
	resolver := protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		src, ok := refs[path]
		if path == main {
			src, ok = text, true
		}
		if !ok {
			// A reference the schema registers wins: a built-in only
			// fills an import the registry left out (builtin.go).
			if fd := builtInFile(path); fd != nil {
				return protocompile.SearchResult{Proto: fd}, nil
			}
			return protocompile.SearchResult{}, fmt.Errorf("import %q is not among the schema's references", path)
		}
		if fd := serialized(src); fd != nil {
			fd.Name = proto.String(path)
			return protocompile.SearchResult{Proto: fd}, nil
		}
		return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
	}))
	c := protocompile.Compiler{Resolver: resolver, MaxParallelism: 1}
	compiled, err := c.Compile(context.Background(), main)
	if err != nil {
		return nil, fmt.Errorf("protobuf schema: %w", err)
	}
	file := compiled[0]
	files := new(protoregistry.Files)
	if err := register(files, file); err != nil {
		return nil, fmt.Errorf("protobuf schema: %w", err)
	}
	return &Schema{file: file, enc: newEncoder(files)}, nil
}

// AppendJSON implements decode.Codec: payload is the message indexes then
// the message's bytes.
func (s *Schema) AppendJSON(dst, payload []byte) ([]byte, error) {
	md, rest, err := messageAt(s.file, payload)
	if err != nil {
		return dst, err
	}
	return s.enc.decode(dst, md, rest)
}

// mainFileName names the schema's own file for the compiler: a path no
// reference has (a registry schema has no file name of its own).
func mainFileName(refs map[string]string) string {
	name := "picomq-registry-schema.proto"
	for {
		if _, taken := refs[name]; !taken {
			return name
		}
		name = "_" + name
	}
}

// serialized returns the FileDescriptorProto that src encodes in base64,
// or nil when src is .proto text. A .proto file always holds characters
// base64 does not (spaces, ';', '{'), so the two cannot be confused.
func serialized(src string) *descriptorpb.FileDescriptorProto {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(src))
	if err != nil || len(raw) == 0 {
		return nil
	}
	fd := new(descriptorpb.FileDescriptorProto)
	if proto.Unmarshal(raw, fd) != nil {
		return nil
	}
	fillJSONNames(fd.MessageType, fd.Extension)
	return fd
}

// fillJSONNames sets the json_name of fields that have none. protoc always
// writes it, but descriptors built by a runtime (Python's CopyToProto,
// which Confluent's Python serializer registers) leave it out, and
// protocompile then takes every such field's JSON name as "" and refuses
// the message for the clash. The name is protoc's: underscores dropped,
// the letter after each one upper-cased.
func fillJSONNames(messages []*descriptorpb.DescriptorProto, fields []*descriptorpb.FieldDescriptorProto) {
	for _, f := range fields {
		if f.JsonName == nil {
			f.JsonName = proto.String(jsonName(f.GetName()))
		}
	}
	for _, m := range messages {
		fillJSONNames(nil, m.Field)
		fillJSONNames(m.NestedType, m.Extension)
	}
}

func jsonName(name string) string {
	out := make([]byte, 0, len(name))
	upper := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_':
			upper = true
		case upper && 'a' <= c && c <= 'z':
			out = append(out, c-'a'+'A')
			upper = false
		default:
			out = append(out, c)
			upper = false
		}
	}
	return string(out)
}

// register adds fd and everything it imports to files.
func register(files *protoregistry.Files, fd protoreflect.FileDescriptor) error {
	if _, err := files.FindFileByPath(fd.Path()); err == nil {
		return nil
	}
	imports := fd.Imports()
	for i := 0; i < imports.Len(); i++ {
		if err := register(files, imports.Get(i).FileDescriptor); err != nil {
			return err
		}
	}
	return files.RegisterFile(fd)
}
