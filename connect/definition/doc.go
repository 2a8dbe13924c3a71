// Package definition reads sink definitions: the TOML files, one per sink,
// that tell picomq-connect which plugin library to run, with which
// plugin_config, on which topics. Use it to load and check definitions
// before anything connects to a broker or starts a plugin: every unknown,
// ill-typed or out-of-range field is refused here, with the file, the line
// and the key.
//
// The package knows nothing of Kafka clients or plugin hosts. Client
// settings from a block's properties table come out as a typed Client,
// which the pipeline package maps to the consumer's options.
//
// Every key is declared once, in keys.go: the top-level and [[topics]]
// keys as tagged structs (name, default, required, values, range, meaning)
// and the librdkafka properties as one table. The declaration drives the
// decoding (go-toml refuses any other key), the generic checks and the
// defaults (declare.go), and the tables of docs/runtime.md (markdown.go,
// kept in sync by TestDocs); the code left in parse.go and properties.go
// checks how keys relate to each other.
//
// File map: keys.go (the declaration), declare.go (reading and applying
// it), markdown.go (the docs' tables), definition.go (types, library
// path, open() config), parse.go (TOML decoding, positioned errors, the
// checks across keys), schema.go (the checks of the binary-format and
// Schema Registry keys: files readable, environment variables set),
// properties.go (the Kafka client settings and their checks), load.go
// (files and directories).
package definition
