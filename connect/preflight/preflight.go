package preflight

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/picomq/heavy-sinks/connect/decode/build"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// LibraryTimeout bounds starting a child, loading one library and reading
// its describe(): a library whose initialisation hangs fails the check.
const LibraryTimeout = 30 * time.Second

// Options for Check.
type Options struct {
	Host      string   // the picomq-host binary (child.FindHost)
	PluginDir string   // resolves a definition's path (Definition.LibraryPath)
	Environ   []string // the environment the plugins read overrides from: os.Environ()
	// Stderr receives what a child writes to stderr (a crash while
	// loading); default: only kept for the error.
	Stderr io.Writer
	// Logger receives a warning for a library that declares no
	// plugin_config in describe(); default slog.Default().
	Logger *slog.Logger
	// Formats build the decoders of binary-format blocks (avro, proto,
	// flatbuffer), as the start does: a schema file the format refuses,
	// or a format this build lacks, is a problem. Nothing connects to a
	// Schema Registry.
	Formats build.Formats
}

// Check returns every problem of every definition: a binary-format
// block's schema that cannot be built into its decoder (naming the file,
// the block and the key), a library that cannot be loaded (naming the
// definition's path), and each plugin_config problem the SDK would refuse
// at open, naming the file and the sink key. Secret values appear in none
// of them. It returns nil when all pass.
func Check(ctx context.Context, defs []*definition.Definition, o Options) []error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	env := sdk.EnvFrom(o.Environ)
	described := map[string]*library{}
	var errs []error
	for _, d := range defs {
		// A decoded block reaches the plugin as json, which every
		// plugin takes (describe() declares no schemas to check against).
		if _, err := o.Formats.Decoders(d, func(name string) string { v, _ := env.Lookup(name); return v }); err != nil {
			errs = append(errs, err) // one line per problem: errors.Join's text
		}
		path := d.LibraryPath(o.PluginDir)
		lib := described[path]
		if lib == nil {
			lib = describe(ctx, o, path)
			described[path] = lib
			if lib.err == nil && lib.fields == nil {
				o.Logger.Warn("the library's describe() lists no plugin_config: its keys are left to open",
					"event", "check_skipped", "library", path)
			}
		}
		if lib.err != nil {
			errs = append(errs, fmt.Errorf("%s: path %q: %w", d.File, d.Path, lib.err))
			continue
		}
		for _, t := range d.Topics {
			if t.MaxInFlight > 1 && !lib.concurrent {
				// Correct, so not a problem: the start warns the same.
				o.Logger.Warn("max_in_flight is above 1 but the plugin does not declare concurrent_consume: it runs the batches one at a time",
					"event", "max_in_flight_serialised", "file", d.File, "sink_key", d.Key, "block", t.Index, "max_in_flight", t.MaxInFlight)
			}
		}
		if lib.fields == nil {
			continue
		}
		js, err := d.OpenConfig()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var open struct {
			PluginConfig json.RawMessage `json:"plugin_config"`
		}
		if err := json.Unmarshal(js, &open); err != nil {
			errs = append(errs, fmt.Errorf("%s: [plugin_config]: %w", d.File, err))
			continue
		}
		for _, p := range sdk.CheckConfig(*lib.fields, open.PluginConfig, d.Key, env) {
			errs = append(errs, fmt.Errorf("%s: sink %q: %s", d.File, d.Key, p))
		}
	}
	return errs
}

// library is what Check learnt of one library: its declared fields (nil
// when describe() lists none), or why it could not be read.
type library struct {
	fields     *[]sdk.Field
	concurrent bool // describe()'s concurrent_consume
	err        error
}

// describe loads the library at path in a child of its own (one Go runtime
// per process), reads describe() and stops the child.
func describe(ctx context.Context, o Options, path string) *library {
	ctx, cancel := context.WithTimeout(ctx, LibraryTimeout)
	defer cancel()
	opts := []hostclient.Option{hostclient.Workers(1), hostclient.KeepLogs(1)}
	if o.Stderr != nil {
		opts = append(opts, hostclient.Stderr(o.Stderr))
	}
	h, err := hostclient.Start(ctx, o.Host, opts...)
	if err != nil {
		return &library{err: fmt.Errorf("starting plugin host %s: %w", o.Host, err)}
	}
	js, err := func() (string, error) {
		l, err := h.Load(path, hostclient.WithContext(ctx))
		if err != nil {
			return "", fmt.Errorf("loading %s: %w", path, err)
		}
		js, err := l.Describe(hostclient.WithContext(ctx))
		if err != nil {
			return "", fmt.Errorf("describe of %s: %w", path, err)
		}
		return js, nil
	}()
	if err != nil {
		h.Kill()
		return &library{err: err}
	}
	if err := h.Close(); err != nil {
		// The description is read; how the child ended does not change it.
		o.Logger.Warn("plugin host exit", "event", "host_close_failed", "library", path, "err", err)
	}
	var d struct {
		Config     json.RawMessage `json:"plugin_config"`
		Concurrent bool            `json:"concurrent_consume"`
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		return &library{err: fmt.Errorf("describe of %s is not a JSON object: %w", path, err)}
	}
	if len(d.Config) == 0 {
		return &library{concurrent: d.Concurrent}
	}
	var fields []sdk.Field // null: declares no keys, so every key is unknown
	if err := json.Unmarshal(d.Config, &fields); err != nil {
		return &library{err: fmt.Errorf("describe of %s: plugin_config: %w", path, err)}
	}
	return &library{fields: &fields, concurrent: d.Concurrent}
}
