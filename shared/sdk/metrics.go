package sdk

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Metric declares one number of an instance's metrics() JSON for a
// Prometheus exporter (describe()'s "metrics", ABI 1.2): its type, its
// unit and the name it is exported under. The JSON keeps its field names
// and units (tools read them as they are); Scale converts the value to the
// unit's base unit, so a field counted in milliseconds is declared with
// Unit seconds and Scale 0.001.
type Metric struct {
	// Field is the number's path in the metrics() JSON, keys joined by
	// ".": "records", "sink.checkpoint_cpu_ms". In Plugin.Metrics it is
	// relative to the sink's own section ("checkpoint_cpu_ms"); describe()
	// prints the full path.
	Field string `json:"field"`
	// Name is the Prometheus name without the exporter's prefix
	// (picomq-connect adds "picomq_plugin_"): lowercase letters, digits
	// and "_"; counters end in "_total"; a unit appears as its suffix
	// ("_seconds", "_bytes", before "_total").
	Name string     `json:"name"`
	Type MetricType `json:"type"`
	Unit Unit       `json:"unit,omitempty"`
	// Scale multiplies the JSON value into the unit's base unit; 0 means 1.
	Scale float64 `json:"scale,omitempty"`
	Help  string  `json:"help"`
}

// MetricType is a Metric's Prometheus type.
type MetricType string

// Metric types. A counter only grows while the instance is open (it starts
// at 0 with every open); anything else is a gauge.
const (
	Counter MetricType = "counter"
	Gauge   MetricType = "gauge"
)

// Unit is a Metric's base unit; UnitNone for counts and versions.
type Unit string

// Units, named as the Prometheus name suffix they require.
const (
	UnitNone    Unit = ""
	UnitSeconds Unit = "seconds"
	UnitBytes   Unit = "bytes"
)

var metricName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Check reports what makes m an invalid declaration. An exporter treats a
// field whose declaration fails it as undeclared.
func (m Metric) Check() error {
	var errs []error
	if m.Field == "" || strings.HasPrefix(m.Field, ".") || strings.HasSuffix(m.Field, ".") || strings.Contains(m.Field, "..") {
		errs = append(errs, fmt.Errorf("field %q is not a path of JSON keys joined by \".\"", m.Field))
	}
	if !metricName.MatchString(m.Name) {
		errs = append(errs, fmt.Errorf("name %q is not lowercase letters, digits and _", m.Name))
	}
	base := m.Name
	switch m.Type {
	case Counter:
		var ok bool
		if base, ok = strings.CutSuffix(m.Name, "_total"); !ok {
			errs = append(errs, fmt.Errorf("counter %q does not end in _total", m.Name))
		}
	case Gauge:
		if strings.HasSuffix(m.Name, "_total") {
			errs = append(errs, fmt.Errorf("gauge %q ends in _total, a counter's suffix", m.Name))
		}
	default:
		errs = append(errs, fmt.Errorf("%s: type %q is not counter or gauge", m.Name, m.Type))
	}
	switch m.Unit {
	case UnitNone:
		for _, u := range []Unit{UnitSeconds, UnitBytes} {
			if strings.HasSuffix(base, "_"+string(u)) {
				errs = append(errs, fmt.Errorf("%s: name ends in _%s without unit %q", m.Name, u, u))
			}
		}
	case UnitSeconds, UnitBytes:
		if !strings.HasSuffix(base, "_"+string(m.Unit)) {
			errs = append(errs, fmt.Errorf("%s: unit %s without the name suffix _%s", m.Name, m.Unit, m.Unit))
		}
	default:
		errs = append(errs, fmt.Errorf("%s: unit %q is not seconds, bytes or none", m.Name, m.Unit))
	}
	if m.Scale < 0 || math.IsNaN(m.Scale) || math.IsInf(m.Scale, 0) {
		errs = append(errs, fmt.Errorf("%s: scale %v is not a positive number", m.Name, m.Scale))
	}
	if m.Help == "" {
		errs = append(errs, fmt.Errorf("%s: no help text", m.Name))
	}
	return errors.Join(errs...)
}

// Apply converts a value of the metrics() JSON to the unit's base unit.
// A scale that is the inverse of a whole number (0.001) divides by that
// number, so 13 ms gives the double nearest 0.013, as 13/1000 does, not
// 13 × 0.001's 0.013000000000000001.
func (m Metric) Apply(v float64) float64 {
	s := m.Scale
	if s == 0 {
		return v
	}
	if inv := math.Round(1 / s); s < 1 && inv*s == 1 {
		return v / inv
	}
	return v * s
}

// CommonMetrics declares the numbers the SDK puts in every instance's
// metrics() JSON. The sink's own fields follow under "sink".
var CommonMetrics = []Metric{
	{Field: "batches", Name: "batches_total", Type: Counter, Help: "Batches consume() returned OK for."},
	{Field: "records", Name: "records_written_total", Type: Counter, Help: "Records of OK batches written: neither rejected nor skipped as already written."},
	{Field: "rejected", Name: "records_rejected_total", Type: Counter, Help: "Records rejected as never writable (ABI 1.1), left to the host."},
	{Field: "skipped", Name: "records_skipped_total", Type: Counter, Help: "Records of replayed batches not written again because the destination already had them (ABI 1.2)."},
	{Field: "bytes", Name: "payload_bytes_total", Type: Counter, Unit: UnitBytes, Help: "Payload bytes of the batches consume() returned OK for."},
	{Field: "failures", Name: "failures_total", Type: Counter, Help: "consume() calls that returned an error."},
	{Field: "retry_failures", Name: "retry_failures_total", Type: Counter, Help: "consume() calls that returned RETRY."},
	{Field: "fatal_failures", Name: "fatal_failures_total", Type: Counter, Help: "consume() calls that returned FATAL."},
}

// declaredMetrics returns the SDK's declarations and the sink's, with the
// sink's fields under "sink.", and fails on an invalid or repeated one.
func declaredMetrics(sink []Metric) ([]Metric, error) {
	out := append([]Metric(nil), CommonMetrics...)
	for _, m := range sink {
		m.Field = "sink." + m.Field
		out = append(out, m)
	}
	fields, names := map[string]bool{}, map[string]bool{}
	for _, m := range out {
		if err := m.Check(); err != nil {
			return nil, err
		}
		if fields[m.Field] || names[m.Name] {
			return nil, fmt.Errorf("metric %s (field %s) is declared twice", m.Name, m.Field)
		}
		fields[m.Field], names[m.Name] = true, true
	}
	return out, nil
}
