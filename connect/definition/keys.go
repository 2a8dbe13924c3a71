package definition

import (
	"strings"
	"time"
)

// The keys of a definition, declared once. go-toml decodes a file into
// rawDefinition (refusing every other key, with its position); the tags
// below give the rest, which declare.go applies key by key (each followed
// by the checks parse.go makes of how it relates to other keys), and
// Markdown renders as the tables of docs/runtime.md (TestDocs keeps them
// in sync):
//
//	toml        the key
//	default     the value when the key is left out (a pointer field)
//	derived     a default the checks compute, as the docs show it
//	required    the key must be set; the hint after "missing: "
//	values      the values accepted, comma-separated
//	unsupported values known but refused: "<key> %q is not supported ..."
//	want        the message for any other value: %[1]q the value,
//	            %[2]s the accepted values as "a, b or c"; default
//	            "%[1]q: want %[2]s"
//	min, max    the range of an integer
//	refused     any value is refused with this message
//	doc         the meaning, for the docs: plain text, shown as written
//
// A required string field (not a pointer) set to "" is missing too.

// rawDefinition is a definition's top-level keys.
type rawDefinition struct {
	Type         *string        `toml:"type" required:"a sink definition says type = \"sink\"" values:"sink" want:"%[1]q: this runtime runs sinks only (type = \"sink\")" doc:"What the file defines; anything else is refused."`
	Key          string         `toml:"key" required:"every sink has a key, 1 to 200 of [A-Za-z0-9_.-] starting with a letter or digit, such as \"orders_delta\"" doc:"1 to 200 of [A-Za-z0-9_.-], starting with a letter or digit; compared case-insensitively between definitions. Names the consumer group and the environment overrides PICOMQ_CONNECTORS_SINK_<KEY>_PLUGIN_CONFIG_<FIELD>, which the plugin reads at open() (the child host inherits the runtime's environment)."`
	Enabled      *bool          `toml:"enabled" default:"true" doc:"false: checked, not started."`
	Version      int64          `toml:"version" default:"0" min:"0" doc:"Passed to open()."`
	Name         string         `toml:"name" default:"" doc:"Passed to open()."`
	Path         string         `toml:"path" required:"the plugin library, such as \"libpicomq_connector_delta_sink\"" doc:"The plugin library: resolved against --plugin-dir unless absolute, .so added unless present (see below)."`
	Topics       []rawTopic     `toml:"topics" required:"a sink needs at least one [[topics]] block" doc:"The [[topics]] blocks, at least one: each is one consumer in one consumer group (below)."`
	PluginConfig map[string]any `toml:"plugin_config" derived:"{}" doc:"Passed to open() as {\"key\",\"name\",\"version\",\"plugin_config\":{…}}, the JSON the header defines. The plugin checks it (unknown keys are BAD_CONFIG, exit 2); --check applies the same checks of keys and types without opening it."`
}

// rawTopic is the keys of a [[topics]] block.
type rawTopic struct {
	Topics                       []string       `toml:"topics" doc:"Explicit topic names, not empty, each listed once. With pattern too: the union. At least one of the two."`
	Pattern                      *string        `toml:"pattern" doc:"Regular expression (Go RE2 syntax) matched against the broker's topic list, anchored with ^ unless it starts with one, re-evaluated every 2 s (client metadata max age), so a new topic is consumed within about 2 s of its creation. It never matches the block's own dead-letter topics (see dead_letter_topic)."`
	Schema                       *string        `toml:"schema" required:"json, text, raw, avro, proto or flatbuffer" values:"json,text,raw,avro,proto,flatbuffer" want:"unknown schema %[1]q (%[2]s)" doc:"How payloads are checked or decoded before consume(): json (each payload must parse as JSON; an empty payload, a tombstone on a compacted topic, goes to the plugin), text (valid UTF-8), raw (as is): the plugin gets the payload bytes unchanged. avro, proto, flatbuffer: the runtime decodes each payload into a JSON object and the plugin gets the batch as json (docs/decode.md); the schema comes from the keys below."`
	AvroSchemaJSON               *string        `toml:"avro_schema_json" doc:"With schema = \"avro\": the Avro schema as JSON text. Without schema_registry_url, the writer schema of every payload (plain Avro binary, no header); with it, optional, the reader schema each record's writer schema is resolved to. One of avro_schema_json and avro_schema_path."`
	AvroSchemaPath               *string        `toml:"avro_schema_path" doc:"As avro_schema_json, read from this file (.avsc) at start; relative to the working directory. The file must exist and be readable."`
	ProtoDescriptorSetPath       *string        `toml:"proto_descriptor_set_path" doc:"With schema = \"proto\" and no schema_registry_url, required: a FileDescriptorSet file (protoc --include_imports --descriptor_set_out) holding proto_message; payloads are plain protobuf bytes. Refused with schema_registry_url (the message comes from each record's schema id and message indexes)."`
	ProtoMessage                 *string        `toml:"proto_message" doc:"With proto_descriptor_set_path, required: the full name of the payloads' message, such as shop.v1.Order."`
	FlatbufferSchemaPath         *string        `toml:"flatbuffer_schema_path" doc:"With schema = \"flatbuffer\", required: the binary schema (.bfbs, flatc --binary --schema) of the payloads. FlatBuffers takes no schema registry."`
	FlatbufferRootType           *string        `toml:"flatbuffer_root_type" derived:"the schema's root_type" doc:"With schema = \"flatbuffer\": the full name of the payloads' table, when it is not the schema's root_type."`
	SchemaRegistryURL            *string        `toml:"schema_registry_url" doc:"With schema avro or proto: the Schema Registry (Confluent API), one or more http(s) URLs, comma-separated. Each payload is in the Confluent wire format (magic byte 0, 4-byte schema id); its schema is fetched by id once and cached. Credentials go in the *_env keys, never in the URL."`
	SchemaRegistryBasicAuthEnv   *string        `toml:"schema_registry_basic_auth_env" doc:"The name of an environment variable holding user:password (Kafka Connect's basic.auth.user.info) for the registry. It must be set at start; its value is never printed."`
	SchemaRegistryBearerTokenEnv *string        `toml:"schema_registry_bearer_token_env" doc:"The name of an environment variable holding a bearer token for the registry; not with schema_registry_basic_auth_env. It must be set at start; its value is never printed."`
	SchemaRegistryCAPath         *string        `toml:"schema_registry_ca_path" doc:"PEM file of the CAs to trust for an https registry instead of the system roots; the file must exist."`
	SchemaRegistryTimeout        *Duration      `toml:"schema_registry_timeout" derived:"10s" doc:"Bound on one registry request (Go duration, above zero). A registry that does not answer in time is a transient failure: the batch is decoded again later (see \"Decoding\"), never dead-lettered."`
	BatchLength                  *int64         `toml:"batch_length" default:"1000" min:"1" max:"1000000" doc:"Flush a topic-partition's bucket at this many records."`
	PollInterval                 *Duration      `toml:"poll_interval" default:"100ms" doc:"Flush a bucket after this long without new records (Go duration, above zero)."`
	MaxBatchLatency              *Duration      `toml:"max_batch_latency" doc:"Beyond the spec, off unless set: flush a bucket once its oldest record has waited this long since a poll returned it, whatever the arrival pattern (a steady trickle never leaves a bucket idle for poll_interval, so without it a bucket waits for batch_length). Go duration, above zero; it may be longer or shorter than poll_interval: the bucket flushes at whichever comes first."`
	MaxInFlight                  *int64         `toml:"max_in_flight" default:"1" min:"1" max:"64" doc:"Beyond the spec, 1 (one batch at a time) unless set: how many batches of this block may be in the plugin's consume() at once, each of a different topic-partition (a partition's batches stay in order, one at a time, unless max_in_flight_per_partition says more). Each partition's offset is committed once its own batch returned OK, so a slow partition does not hold the others. Pays with a plugin that declares concurrent_consume (see \"Batches in flight\")."`
	MaxInFlightPerPartition      *int64         `toml:"max_in_flight_per_partition" default:"1" min:"1" max:"16" doc:"Beyond the spec, 1 unless set: how many of the block's batches in flight may be of one topic-partition (pipelined batches), at most max_in_flight. A partition's next batch, the next batch_length records (flushed by the same rules as any batch), then reaches the plugin before the one before it was answered; offsets are still committed in order, each once every batch before it returned OK. Takes effect only with a plugin that declares pipelined (ABI 1.5); with another it is said at start and 1 is used (see \"Pipelined batches\")."`
	ConsumerGroup                *string        `toml:"consumer_group" derived:"picomq-connect-sink-<key>" doc:"The group id, not empty. Choice: the spec gives every block its own group but one default name; so the first block gets picomq-connect-sink-<key> and block N ≥ 2 picomq-connect-sink-<key>-<N>. Two blocks naming one group are refused."`
	AutoOffsetReset              *string        `toml:"auto_offset_reset" default:"earliest" values:"earliest,latest" want:"auto_offset_reset %[1]q: want %[2]s" doc:"Where a group with no committed offset starts."`
	ErrorsTolerance              *string        `toml:"errors_tolerance" default:"none" values:"none,all" doc:"Beyond the spec: what a record that can never be written does. none: the spec's behaviour, the consumer stops on it. all: it goes to the dead-letter topic and the rest of its batch is written (see \"Bad records\")."`
	DeadLetterTopic              *string        `toml:"dead_letter_topic" derived:"<topic>.dlq" doc:"With errors_tolerance = \"all\" only: the topic rejected records are produced to; by default the source topic's name plus .dlq. A block's pattern never matches its own dead-letter topics: with the default naming it leaves out every topic ending in .dlq (so 'orders\\..*' does not read orders.eu.dlq), with an explicit dead_letter_topic that topic. A dead-letter topic the block names in topics is refused. A missing dead-letter topic is created before the block consumes (see \"Bad records\")."`
	Properties                   map[string]any `toml:"properties" derived:"{}" doc:"librdkafka consumer keys mapped to the client (below). Any other key is refused by name."`
	Transforms                   []rawTransform `toml:"transforms" derived:"[]" doc:"Beyond the spec's keys (the spec names the stage): the [[topics.transforms]] tables, run in the order written on each record's JSON object after decoding, before consume() (below, and see \"Transforms\"). Refused with schema = \"raw\" or \"text\"."`
}

// rawTransform is the keys of a [[topics.transforms]] table. Which keys a
// type takes is transform.Compile's to check (it names the key).
type rawTransform struct {
	Type      *string    `toml:"type" required:"add_fields, delete_fields, update_fields, filter_fields, filter_records or unwrap_envelope" values:"add_fields,delete_fields,update_fields,filter_fields,filter_records,unwrap_envelope" want:"unknown transform type %[1]q (%[2]s)" doc:"The transform. Each type takes only its own keys below; any other is refused naming it."`
	Fields    []rawField `toml:"fields" doc:"add_fields: the fields to add, in order, each an inline table (below). A field that exists already gets the new value in its place."`
	Paths     []string   `toml:"paths" doc:"delete_fields: the fields to remove, dotted paths into nested objects (a.b); a missing one is nothing. filter_fields: the top-level fields to keep, in the record's order; every other is removed."`
	Field     *string    `toml:"field" doc:"update_fields, filter_records, unwrap_envelope: the field acted on, a dotted path (a.b). A path through a value that is neither an object nor null is the record's error."`
	RenameTo  *string    `toml:"rename_to" doc:"update_fields: the field's new name, in the same object and the same place; a field already called so is replaced."`
	Value     any        `toml:"value" doc:"update_fields: the field's new value, any TOML value (tables with their keys sorted, dates as RFC 3339 strings)."`
	IfMissing *string    `toml:"if_missing" derived:"skip" values:"skip,error" doc:"update_fields: a record without the field goes on unchanged (skip) or is the record's error (error)."`
	Equals    any        `toml:"equals" doc:"filter_records: the test is that the field equals this string, number (exact: 1, 1.0 and 1e0 are equal) or boolean. A missing or null field is equal to nothing."`
	In        []any      `toml:"in" doc:"filter_records: the test is that the field equals one of these values, compared as equals does."`
	Present   *bool      `toml:"present" doc:"filter_records: the test is that the field is there and not null (true), or missing or null (false)."`
	Action    *string    `toml:"action" derived:"keep" values:"keep,drop" doc:"filter_records: what a record that passes the test (exactly one of equals, in and present) does: keep (the others are dropped) or drop. A dropped record is counted and its offset moves."`
	OnNull    *string    `toml:"on_null" derived:"drop" values:"drop,error" doc:"unwrap_envelope: what a record whose field is null (a Debezium delete) does: drop (counted, its offset moves) or error (the record's error). A missing field or one that is not an object is always the record's error."`
}

// rawField is one entry of add_fields' fields.
type rawField struct {
	Name    string  `toml:"name" required:"the name of the field to add" doc:"The top-level field, written as is (a dot is part of the name)."`
	Value   any     `toml:"value" doc:"A static value: any TOML value, as value of update_fields."`
	Compute *string `toml:"compute" values:"timestamp_ms,timestamp_rfc3339,topic,partition,offset,key,key_base64,uuid" want:"compute %[1]q: want %[2]s" doc:"A value of the record: its timestamp (epoch milliseconds, or an RFC 3339 UTC string with milliseconds), topic, partition, offset, key (a UTF-8 string: a key that is not UTF-8 is the record's error; key_base64: padded standard base64, any key; null without a key) or a random UUID v4 string."`
	Header  *string `toml:"header" doc:"The value of the record's header of this name (the last one when repeated) as a string; null when it has none; not UTF-8 is the record's error."`
}

// property is one librdkafka key of a block's properties table that the
// runtime maps to its Kafka client.
type property struct {
	name string
	kind string // "string", "ms" or "bytes": an integer in [1, MaxInt32]
	// values are those accepted, compared case-insensitively; none: any.
	values []string
	doc    string
	set    func(c *Client, s string, n int64) // nil: read by the checks
}

// properties is every key a properties table may hold, in the docs' order.
var properties = []property{
	{"bootstrap.servers", "string", nil, "Seed brokers for this block, comma-separated (overrides --brokers).", func(c *Client, s string, _ int64) {
		for _, b := range strings.Split(s, ",") {
			if b = strings.TrimSpace(b); b != "" {
				c.Brokers = append(c.Brokers, b)
			}
		}
	}},
	{"client.id", "string", nil, "Client id.", func(c *Client, s string, _ int64) { c.ClientID = s }},
	{"session.timeout.ms", "ms", nil, "Group session timeout.", func(c *Client, _ string, n int64) { c.SessionTimeout = time.Duration(n) * time.Millisecond }},
	{"heartbeat.interval.ms", "ms", nil, "Group heartbeat interval.", func(c *Client, _ string, n int64) { c.Heartbeat = time.Duration(n) * time.Millisecond }},
	{"fetch.max.bytes", "bytes", nil, "Most bytes of one fetch.", func(c *Client, _ string, n int64) { c.FetchMaxBytes = int32(n) }},
	{"max.partition.fetch.bytes", "bytes", nil, "Most bytes of one partition in one fetch.", func(c *Client, _ string, n int64) { c.PartitionBytes = int32(n) }},
	{"fetch.min.bytes", "bytes", nil, "Fewest bytes a fetch waits for. When neither this nor fetch.wait.max.ms is set: batch_length × 256, at most 1 MiB (see Steady traffic).", func(c *Client, _ string, n int64) { c.FetchMinBytes = int32(n) }},
	{"fetch.wait.max.ms", "ms", nil, "Longest a fetch waits for fetch.min.bytes. When neither this nor fetch.min.bytes is set: poll_interval (with max_batch_latency set: half of the shorter of the two), within 10 to 500 ms; a bucket then counts as idle once its broker also answered a fetch after its last records, or poll_interval plus this wait passed (see Steady traffic). A block that sets either gets the Kafka client's default for the other (1 byte, 5 s).", func(c *Client, _ string, n int64) { c.FetchMaxWait = time.Duration(n) * time.Millisecond }},
	{"security.protocol", "string", []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"},
		"TLS (1.2 or later, system roots) with SSL and SASL_SSL; SASL_PLAINTEXT and SASL_SSL need sasl.mechanism, the others refuse it.", nil},
	{"ssl.ca.location", "string", nil, "PEM file of the CAs to trust instead of the system roots; needs security.protocol SSL or SASL_SSL, and the file must exist.", func(c *Client, s string, _ int64) { c.CAFile = s }},
	{"sasl.mechanism", "string", []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, "SASL mechanism; needs security.protocol SASL_PLAINTEXT or SASL_SSL, sasl.username and sasl.password.", func(c *Client, s string, _ int64) { c.SASLMechanism = strings.ToUpper(s) }},
	{"sasl.mechanisms", "string", []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, "librdkafka's other name for sasl.mechanism; set one of the two.", func(c *Client, s string, _ int64) { c.SASLMechanism = strings.ToUpper(s) }},
	{"sasl.username", "string", nil, "SASL user; needs sasl.mechanism.", func(c *Client, s string, _ int64) { c.SASLUser = s }},
	{"sasl.password", "string", nil, "SASL password; needs sasl.mechanism. Never printed.", func(c *Client, s string, _ int64) { c.SASLPassword = Secret(s) }},
}
