package definition

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/connect/transform"
)

// Defaults the spec gives for a [[topics]] block, as keys.go declares them
// (TestDefaultsAndOverrides and TestDeclaredLimits keep the two equal).
const (
	DefaultBatchLength  = 1000
	DefaultPollInterval = 100 * time.Millisecond
	// MaxBatchLength bounds batch_length: a bucket is held in memory.
	MaxBatchLength = 1_000_000
	// MaxInFlight bounds max_in_flight: each batch in flight holds a host
	// worker thread of its library's child.
	MaxInFlight = 64
	// MaxInFlightPerPartition bounds max_in_flight_per_partition: the
	// batches of one partition a plugin holds at once, each waiting for the
	// one before it.
	MaxInFlightPerPartition = 16
)

// Definition is one sink definition file, checked.
type Definition struct {
	File    string // where it was read from, for messages
	Key     string
	Enabled bool // default true
	Version int64
	Name    string
	Path    string // as written; see LibraryPath
	Topics  []Topic
	// PluginConfig is the [plugin_config] table, passed to open() as is.
	PluginConfig map[string]any

	pathLine, pathCol int // where path is written, for CheckLibrary
}

// Topic is one [[topics]] block: one consumer in one consumer group.
type Topic struct {
	Index   int      // 1-based position among the file's [[topics]] blocks
	Topics  []string // explicit topic names
	Pattern string   // anchored with ^; empty when none
	Schema  Schema
	// The schema of a binary format (avro, proto, flatbuffer), as the
	// block names it: files are read, and secrets looked up, when the
	// decoder is built (connect/decode/build). Empty for json, text, raw.
	AvroSchemaJSON         string // avro_schema_json
	AvroSchemaPath         string // avro_schema_path
	ProtoDescriptorSetPath string // proto_descriptor_set_path
	ProtoMessage           string // proto_message
	FlatbufferSchemaPath   string // flatbuffer_schema_path
	FlatbufferRootType     string // flatbuffer_root_type; "" for the schema's root_type
	// Registry is the block's Schema Registry; nil without
	// schema_registry_url.
	Registry     *Registry
	BatchLength  int
	PollInterval time.Duration
	// MaxBatchLatency bounds how long a record waits in its bucket after
	// it was fetched; 0 is off (the spec: batch_length or poll_interval).
	MaxBatchLatency time.Duration
	// MaxInFlight is how many batches of the block, each of a different
	// topic-partition, may be in the plugin's consume() at once; 1 (the
	// default) delivers one at a time, in the loop that polls.
	MaxInFlight int
	// MaxInFlightPerPartition is how many of those may be of one
	// topic-partition (pipelined batches, ABI 1.5): 1 (the default) to
	// MaxInFlightPerPartition, at most MaxInFlight. The runtime uses it
	// only with a plugin that declares pipelined.
	MaxInFlightPerPartition int
	// ConsumerGroup is the group id: consumer_group, or
	// picomq-connect-sink-<key> for the first block and
	// picomq-connect-sink-<key>-<Index> for the others.
	ConsumerGroup string
	OffsetReset   OffsetReset
	Client        Client
	// ErrorsTolerance says what a record that can never be written does:
	// stop the consumer (ToleranceNone, the spec's behaviour) or go to the
	// dead-letter topic (ToleranceAll).
	ErrorsTolerance Tolerance
	// DeadLetterTopic is where ToleranceAll produces rejected records; empty
	// means "<source topic>.dlq" (see DeadLetterFor).
	DeadLetterTopic string
	// Transforms are the block's [[topics.transforms]], compiled; nil when
	// it has none (payloads go to the plugin as before).
	Transforms *transform.Chain
}

// InFlight is how many batches the sink's blocks may have in consume() at
// once: the sum of their max_in_flight.
func (d *Definition) InFlight() int {
	n := 0
	for _, t := range d.Topics {
		n += t.MaxInFlight
	}
	return n
}

// Tolerance is errors_tolerance.
type Tolerance string

// errors_tolerance values.
const (
	ToleranceNone Tolerance = "none"
	ToleranceAll  Tolerance = "all"
)

// DeadLetterSuffix makes the default dead-letter topic of a source topic.
const DeadLetterSuffix = ".dlq"

// DeadLetterFor is the dead-letter topic of records from topic.
func (t *Topic) DeadLetterFor(topic string) string {
	if t.DeadLetterTopic != "" {
		return t.DeadLetterTopic
	}
	return topic + DeadLetterSuffix
}

// DeadLetterExcludes are the patterns a pattern block must not match so
// that it never consumes its own dead letters: with errors_tolerance =
// "all", the explicit dead_letter_topic, or every topic ending in ".dlq"
// when the default "<topic>.dlq" naming is in use (a pattern such as
// 'orders\..*' would otherwise match orders.eu.dlq). A block that names a
// ".dlq" topic in its topics list consumes it on purpose and keeps it.
func (t *Topic) DeadLetterExcludes() []string {
	if t.Pattern == "" || t.ErrorsTolerance != ToleranceAll {
		return nil
	}
	if t.DeadLetterTopic != "" {
		return []string{"^" + regexp.QuoteMeta(t.DeadLetterTopic) + "$"}
	}
	for _, name := range t.Topics {
		if strings.HasSuffix(name, DeadLetterSuffix) {
			return nil
		}
	}
	return []string{regexp.QuoteMeta(DeadLetterSuffix) + "$"}
}

// Consumes reports whether the block reads topic (named, or matched by its
// pattern): a dead-letter topic it consumed would feed itself.
func (t *Topic) Consumes(topic string) bool {
	for _, name := range t.Topics {
		if name == topic {
			return true
		}
	}
	if t.Pattern == "" {
		return false
	}
	for _, ex := range t.DeadLetterExcludes() {
		if regexp.MustCompile(ex).MatchString(topic) {
			return false
		}
	}
	re, err := regexp.Compile(t.Pattern)
	return err == nil && re.MatchString(topic)
}

// Schema is how record payloads are decoded before consume().
type Schema string

// The schemas of the spec. JSON, Text and Raw payloads reach the plugin as
// they are; Avro, Proto and Flatbuffer payloads are decoded by the runtime
// into JSON (see Binary).
const (
	SchemaJSON       Schema = "json"
	SchemaText       Schema = "text"
	SchemaRaw        Schema = "raw"
	SchemaAvro       Schema = "avro"
	SchemaProto      Schema = "proto"
	SchemaFlatbuffer Schema = "flatbuffer"
)

// Binary reports whether payloads of the schema are decoded by the
// runtime (connect/decode) and reach the plugin as json.
func (s Schema) Binary() bool {
	return s == SchemaAvro || s == SchemaProto || s == SchemaFlatbuffer
}

// Registry is a block's Schema Registry settings. Secrets are named, never
// held: the environment variables are read when the decoder is built.
type Registry struct {
	URLs           []string      // schema_registry_url, split at commas
	BasicAuthEnv   string        // schema_registry_basic_auth_env: the variable's name
	BearerTokenEnv string        // schema_registry_bearer_token_env: the variable's name
	CAPath         string        // schema_registry_ca_path
	Timeout        time.Duration // schema_registry_timeout, default DefaultRegistryTimeout
}

// DefaultRegistryTimeout bounds one registry request unless
// schema_registry_timeout says otherwise.
const DefaultRegistryTimeout = 10 * time.Second

// OffsetReset is where a group with no committed offset starts.
type OffsetReset string

// auto_offset_reset values.
const (
	Earliest OffsetReset = "earliest"
	Latest   OffsetReset = "latest"
)

// Duration is a TOML string such as "100ms" or "2s".
type Duration time.Duration

// UnmarshalText parses a Go duration; it must be above zero.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: want a number with a unit, such as \"100ms\" or \"2s\"", b)
	}
	if v <= 0 {
		return fmt.Errorf("duration %q must be above zero", b)
	}
	*d = Duration(v)
	return nil
}

// LibraryPath resolves path against dir (unless it is absolute) and adds
// ".so" unless it ends in it already.
func (d *Definition) LibraryPath(dir string) string {
	p := d.Path
	if !strings.HasSuffix(p, ".so") {
		p += ".so"
	}
	if strings.HasPrefix(p, "/") || dir == "" {
		return p
	}
	return strings.TrimSuffix(dir, "/") + "/" + p
}

// CheckLibrary refuses a definition whose library LibraryPath(dir) does
// not find, naming the path line, the path as written and the file looked
// for: the operator sees at once whether the path or --plugin-dir is off.
func (d *Definition) CheckLibrary(dir string) error {
	lib := d.LibraryPath(dir)
	st, err := os.Stat(lib)
	var why error
	switch {
	case err != nil:
		why = err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			why = pe.Err // the file is named already
		}
	case st.IsDir():
		why = errors.New("a directory, not a library")
	default:
		return nil
	}
	return &Error{File: d.File, Line: d.pathLine, Col: d.pathCol, Key: "path",
		Msg: fmt.Sprintf("%q resolves to %s: %v", d.Path, lib, why)}
}

// OpenConfig is the JSON open() receives, as include/picomq_sink.h
// defines it: {"key","name","version","plugin_config"}.
func (d *Definition) OpenConfig() ([]byte, error) {
	pc := d.PluginConfig
	if pc == nil {
		pc = map[string]any{}
	}
	b, err := json.Marshal(struct {
		Key          string         `json:"key"`
		Name         string         `json:"name"`
		Version      int64          `json:"version"`
		PluginConfig map[string]any `json:"plugin_config"`
	}{d.Key, d.Name, d.Version, pc})
	if err != nil {
		return nil, fmt.Errorf("%s: [plugin_config]: %w", d.File, err)
	}
	return b, nil
}

// GroupPrefix is the default consumer group of a sink, before its key.
const GroupPrefix = "picomq-connect-sink-"

var keyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$`)

// anchor prefixes ^ unless the pattern starts with it, as the spec says.
func anchor(p string) string {
	if strings.HasPrefix(p, "^") {
		return p
	}
	return "^" + p
}
