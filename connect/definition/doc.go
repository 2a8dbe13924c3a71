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
// File map: definition.go (types, defaults, checks), parse.go (TOML
// decoding and positioned errors), properties.go (the librdkafka keys
// understood), load.go (files and directories).
package definition
