package sdk

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/picomq/heavy-sinks/shared/abi"
)

// ABI version implemented by this SDK (picomq_sink.h).
const (
	ABIMajor = abi.Major
	ABIMinor = abi.Minor
)

// Version is the plugin version, stamped at build time with
// -ldflags "-X github.com/picomq/heavy-sinks/shared/sdk.Version=v1.2.3".
// Unstamped builds report the VCS revision Go recorded, or "devel".
var Version string

// BuildVersion is the plugin version describe() reports.
func BuildVersion() string { return version() }

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return "devel+" + s.Value
			}
		}
	}
	return "devel"
}

// Description is the document describe() returns.
type Description struct {
	Name       string  `json:"name"`
	Version    string  `json:"version"`
	ABIVersion string  `json:"abi_version"`
	ABIMajor   int     `json:"abi_major"`
	ABIMinor   int     `json:"abi_minor"`
	GoVersion  string  `json:"go_version"`
	Config     []Field `json:"plugin_config"`
	// PayloadChecks names the schemas whose payloads the sink checks as
	// strictly as the runtime spec asks of the runtime (Plugin.ChecksJSON:
	// "json"), so a runtime may leave the check to it.
	PayloadChecks []string `json:"payload_checks,omitempty"`
	// Metrics declares the numbers of metrics() (ABI 1.2): type, unit and
	// Prometheus name. A host that finds no declaration for a field (or no
	// "metrics" at all: an older plugin) exports it untyped.
	Metrics []Metric `json:"metrics,omitempty"`
	// ConcurrentConsume (Plugin.ConcurrentConsume): consume calls of one
	// instance run concurrently, and batches for one destination may be
	// written together. Absent: they run one at a time (the header allows
	// a host to call concurrently either way; the plugin serialises).
	ConcurrentConsume bool `json:"concurrent_consume,omitempty"`
	// Redrive (Plugin.Redrive, ABI 1.4): the sink takes redrive batches
	// (Batch.Redrive) exactly once. A host sends them to no other plugin.
	Redrive bool `json:"redrive,omitempty"`
	// Pipelined (Plugin.Pipelined, ABI 1.5): the sink keeps the order of
	// pipelined batches (Batch.Follows) itself.
	Pipelined bool `json:"pipelined,omitempty"`
}

// Describe returns the static description of the registered plugin. Secret
// keys are flagged; no value other than declared defaults appears.
func Describe() ([]byte, error) {
	reg := currentRegistration()
	if reg == nil {
		return nil, Fatalf("no sink is registered in this library")
	}
	d := Description{
		Name:       reg.name,
		Version:    version(),
		ABIVersion: strconv.Itoa(ABIMajor) + "." + strconv.Itoa(ABIMinor),
		ABIMajor:   ABIMajor,
		ABIMinor:   ABIMinor,
		GoVersion:  runtime.Version(),
		Config:     reg.schema.Fields,
		Metrics:    reg.metrics,

		ConcurrentConsume: reg.concurrent,
		Redrive:           reg.redrive,
		Pipelined:         reg.pipelined,
	}
	if reg.checksJSON {
		d.PayloadChecks = []string{"json"}
	}
	return json.Marshal(d)
}
