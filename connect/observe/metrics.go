package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Sink is what the endpoint reads of a running sink; *pipeline.Sink.
type Sink interface {
	Key() string
	State() (pipeline.State, error)
	Partitions() []pipeline.PartitionStatus
}

// Flying is a Sink that counts its batches in consume(); *pipeline.Sink.
type Flying interface {
	InFlight() int
}

// Pipelining is a Sink that counts its pipelined batches
// (max_in_flight_per_partition); *pipeline.Sink.
type Pipelining interface {
	Pipelined() (followed, unsent int64)
}

// Plugin returns an instance's metrics() JSON; *child.Instance.
type Plugin interface {
	Metrics(ctx context.Context) (string, error)
}

// Destined is a Plugin that knows where its sink writes as configured:
// the destination key's value, templates unresolved (the table label of
// the freshness metrics); *child.Instance.
type Destined interface {
	Destination() string
}

// PluginTimeout is the default bound on one instance's metrics() call
// during a scrape.
const PluginTimeout = 2 * time.Second

// Metrics counts deliveries (it is the pipeline's Observer) and collects,
// at scrape time, the sinks' state and lag and their plugins' metrics().
type Metrics struct {
	// PluginTimeout bounds each plugin's metrics() call during a scrape;
	// set before serving. Default PluginTimeout.
	PluginTimeout time.Duration

	reg         *prometheus.Registry
	deliveries  *prometheus.CounterVec
	records     *prometheus.CounterVec
	retries     *prometheus.CounterVec
	deadLetters *prometheus.CounterVec
	filtered    *prometheus.CounterVec // records a transform dropped
	consume     *prometheus.HistogramVec
	batch       *prometheus.HistogramVec
	decoded     *prometheus.CounterVec
	decodeTime  *prometheus.CounterVec
	commit      *prometheus.HistogramVec // consume() → OK, by sink and table

	mu    sync.Mutex
	sinks []target
	// tables caches each sink's table label, read from its plugin at its
	// first OK delivery (the instance is open and described by then).
	tables map[string]string
	// newest is the newest committed record timestamp per sink and table.
	newest map[sinkTable]time.Time
}

type sinkTable struct{ sink, table string }

type target struct {
	sink   Sink
	plugin Plugin // nil: no plugin metrics
}

var (
	sinkTopic = []string{"sink_key", "topic"}
	sinkTP    = []string{"sink_key", "topic", "partition"}
	// sinkTableLabels labels the freshness metrics: table is the sink's
	// destination template, one value per sink, never the resolved name.
	sinkTableLabels = []string{"sink_key", "table"}
	states          = []pipeline.State{pipeline.StateStarting, pipeline.StateRunning, pipeline.StateError, pipeline.StateStopped}
	outcomes        = []pipeline.Outcome{pipeline.OK, pipeline.Retry, pipeline.Fatal, pipeline.Exited, pipeline.Invalid}
)

// NewMetrics returns Metrics with their own registry, which also holds the
// Go runtime and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		PluginTimeout: PluginTimeout,
		reg:           prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "picomq_connect_deliveries_total",
			Help: "Batches handed to the plugin's consume() (every attempt), or refused before it (outcome invalid; decode_retry: the block's decoder failed, not a record, and the batch is decoded again), by outcome.",
		}, append(slices.Clip(sinkTopic), "outcome")),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "picomq_connect_records_delivered_total",
			Help: "Records of batches consume() returned OK for.",
		}, sinkTopic),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "picomq_connect_retries_total",
			Help: "Deliveries of a batch again (attempts 2 to 5) after RETRY or a plugin host death.",
		}, sinkTopic),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "picomq_connect_dead_letters_total",
			Help: "Records routed to the dead-letter topic, each acknowledged by the broker, by reason class (value, size, encoding).",
		}, append(sinkTopic[:len(sinkTopic):len(sinkTopic)], "reason")),
		filtered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "picomq_connect_records_filtered_total",
			Help: "Records a transform dropped (filter_records, unwrap_envelope of a null): never handed to the plugin, their offsets committed with their batch.",
		}, sinkTopic),
		consume: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "picomq_connect_consume_duration_seconds",
			Help:    "Time of one consume() call, from the request to the plugin's answer, every attempt and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5 ms to 41 s
		}, sinkTopic),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "picomq_connect_batch_records",
			Help:    "Records per batch, counted at its first attempt.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 11), // 1 to 1 048 576
		}, sinkTopic),
	}
	m.decoded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picomq_connect_records_decoded_total",
		Help: "Payloads of blocks of schema avro, proto or flatbuffer the runtime decoded into JSON (tombstones and decode retries not counted).",
	}, sinkTopic)
	m.decodeTime = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picomq_connect_decode_seconds_total",
		Help: "Time the runtime spent decoding those payloads.",
	}, sinkTopic)
	m.commit = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "picomq_connect_commit_duration_seconds",
		Help:    "Time from handing a batch to consume() to its OK: the write and commit to the table (table: the sink's destination as configured, its template unresolved).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5 ms to 41 s
	}, sinkTableLabels)
	m.reg.MustRegister(m.deliveries, m.commit, m.records, m.retries, m.deadLetters, m.filtered, m.consume, m.batch, m.decoded, m.decodeTime,
		scrape{m}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Watch exports the runtime's Budget of buffered bytes (shared by every
// sink): the bytes buffered now and the early flushes its cap caused.
// Called once, before serving.
func (m *Metrics) Watch(b *pipeline.Budget) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "picomq_connect_buffered_bytes",
			Help: "Bytes (key, value and headers) of the records every consumer holds in its buckets, not yet committed.",
		}, func() float64 { return float64(b.Used()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "picomq_connect_memory_flushes_total",
			Help: "Batches flushed before batch_length or their deadline because the buffered bytes passed --max-buffered-bytes.",
		}, func() float64 { return float64(b.EarlyFlushes()) }))
}

// Registry is where every metric is registered; /metrics serves it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Add makes a sink, and its plugin instance (nil for none), visible in
// /metrics and /status.
func (m *Metrics) Add(s Sink, p Plugin) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sinks = append(m.sinks, target{s, p})
}

func (m *Metrics) targets() []target {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sinks)
}

// Delivered implements pipeline.Observer.
func (m *Metrics) Delivered(d pipeline.Delivery) {
	l := prometheus.Labels{"sink_key": d.Sink, "topic": d.Topic}
	// The first delivery of a topic creates every series of it at zero,
	// so rate() and increase() see the first failure.
	for _, o := range outcomes {
		m.deliveries.WithLabelValues(d.Sink, d.Topic, o.String())
	}
	m.deliveries.WithLabelValues(d.Sink, d.Topic, d.Outcome.String()).Inc()
	records, retries, filtered := m.records.With(l), m.retries.With(l), m.filtered.With(l)
	for _, reason := range deadLetterReasons { // at zero from the first delivery, like the others
		m.deadLetters.WithLabelValues(d.Sink, d.Topic, reason)
	}
	if d.Outcome == pipeline.OK {
		records.Add(float64(d.Records))
		filtered.Add(float64(d.Filtered)) // once: only the attempt that returned OK
	}
	if d.Attempt > 1 {
		retries.Inc()
	}
	for reason, n := range d.DeadLetters {
		m.DeadLettered(d.Sink, d.Topic, reason, n)
	}
	if d.Decoded > 0 {
		// Only blocks that decode get these series.
		m.decoded.With(l).Add(float64(d.Decoded))
		m.decodeTime.With(l).Add(d.DecodeTook.Seconds())
	}
	if d.Outcome == pipeline.DecodeRetry {
		return // nothing reached consume(); the batch comes again
	}
	if d.Outcome != pipeline.Invalid {
		m.consume.With(l).Observe(d.Took.Seconds())
	}
	if d.Outcome == pipeline.OK && d.Attempt >= 1 {
		m.committed(d)
	}
	if d.Attempt <= 1 {
		m.batch.With(l).Observe(float64(d.Records))
	}
}

// committed counts a batch consume() returned OK for in the freshness
// metrics of its sink's table. A batch that never reached consume()
// (attempt 0: every record filtered or dead-lettered) is not counted.
func (m *Metrics) committed(d pipeline.Delivery) {
	table := m.table(d.Sink)
	m.commit.WithLabelValues(d.Sink, table).Observe(d.Took.Seconds())
	if d.Newest.IsZero() {
		return
	}
	k := sinkTable{d.Sink, table}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.newest == nil {
		m.newest = map[sinkTable]time.Time{}
	}
	if d.Newest.After(m.newest[k]) {
		m.newest[k] = d.Newest
	}
}

// table returns the table label of sink: its plugin's Destination, read
// once; "" for a plugin that declares none.
func (m *Metrics) table(sink string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.tables[sink]; ok {
		return t
	}
	var table string
	for _, t := range m.sinks {
		if d, ok := t.plugin.(Destined); ok && t.sink.Key() == sink {
			table = d.Destination()
		}
	}
	if m.tables == nil {
		m.tables = map[string]string{}
	}
	m.tables[sink] = table
	return table
}

// freshness returns the newest committed record timestamp per sink and
// table.
func (m *Metrics) freshness() map[sinkTable]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.newest)
}

// deadLetterReasons are the ABI's reject reason classes, the values of the
// reason label (a bounded set: a later minor's class is one more).
var deadLetterReasons = []string{"value", "size", "encoding"}

// DeadLettered counts n records of sink's topic routed to the dead-letter
// topic for reason, for a caller that reports them apart from a Delivery.
func (m *Metrics) DeadLettered(sink, topic, reason string, n int) {
	m.deadLetters.WithLabelValues(sink, topic, reason).Add(float64(n))
}

// scrape collects what is read at scrape time. It describes nothing, so
// the registry accepts the plugin metrics, whose names it cannot know in
// advance (an unchecked collector).
type scrape struct{ m *Metrics }

var (
	stateDesc = prometheus.NewDesc("picomq_connect_sink_state",
		"1 for the sink's current state (starting, running, error, stopped), 0 for the others.", []string{"sink_key", "state"}, nil)
	lagDesc = prometheus.NewDesc("picomq_connect_consumer_lag_records",
		"High watermark minus the committed offset of a topic-partition the sink consumes.", sinkTP, nil)
	lastBatchDesc = prometheus.NewDesc("picomq_connect_last_batch_timestamp_seconds",
		"Unix time of the last batch of a topic-partition consume() returned OK for.", sinkTP, nil)
	inFlightDesc = prometheus.NewDesc("picomq_connect_batches_in_flight",
		"Batches of the sink handed to consume() and not answered yet: at most one per block, or the sum of the blocks' max_in_flight.", []string{"sink_key"}, nil)
	followedDesc = prometheus.NewDesc("picomq_connect_pipelined_batches_total",
		"Batches handed to consume() while the batch before them of their partition was unanswered (max_in_flight_per_partition above 1; ABI 1.5, follows set).", []string{"sink_key"}, nil)
	unsentDesc = prometheus.NewDesc("picomq_connect_pipelined_batches_unsent_total",
		"Pipelined batches not delivered or not kept: their one attempt was not OK, or a batch before them failed or was not written; their records were sent again.", []string{"sink_key"}, nil)
	newestDesc = prometheus.NewDesc("picomq_connect_committed_event_timestamp_seconds",
		"Unix time of the newest Kafka record timestamp among the sink's batches consume() returned OK for (event time, as the producer or broker set it).", sinkTableLabels, nil)
	ageDesc = prometheus.NewDesc("picomq_connect_committed_event_age_seconds",
		"Now minus picomq_connect_committed_event_timestamp_seconds at the scrape: how old the newest record in the table is; it grows while nothing commits (negative when producers' clocks run ahead).", sinkTableLabels, nil)
	pluginUpDesc = prometheus.NewDesc("picomq_connect_plugin_metrics_up",
		"1 when the sink's plugin answered metrics() within the timeout during this scrape, else 0.", []string{"sink_key"}, nil)
)

func (scrape) Describe(chan<- *prometheus.Desc) {}

func (s scrape) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for k, t := range s.m.freshness() {
		ch <- prometheus.MustNewConstMetric(newestDesc, prometheus.GaugeValue, float64(t.UnixNano())/1e9, k.sink, k.table)
		ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, now.Sub(t).Seconds(), k.sink, k.table)
	}
	ts := s.m.targets()
	var wg sync.WaitGroup
	for _, t := range ts {
		key := t.sink.Key()
		st, _ := t.sink.State()
		for _, v := range states {
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, b2f(st == v), key, string(v))
		}
		if f, ok := t.sink.(Flying); ok {
			ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(f.InFlight()), key)
		}
		if p, ok := t.sink.(Pipelining); ok {
			followed, unsent := p.Pipelined()
			ch <- prometheus.MustNewConstMetric(followedDesc, prometheus.CounterValue, float64(followed), key)
			ch <- prometheus.MustNewConstMetric(unsentDesc, prometheus.CounterValue, float64(unsent), key)
		}
		for _, p := range t.sink.Partitions() {
			part := fmt.Sprint(p.Partition)
			if p.HighWatermark >= 0 {
				ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(p.Lag()), key, p.Topic, part)
			}
			if !p.LastBatch.IsZero() {
				ch <- prometheus.MustNewConstMetric(lastBatchDesc, prometheus.GaugeValue,
					float64(p.LastBatch.UnixNano())/1e9, key, p.Topic, part)
			}
		}
		if t.plugin != nil {
			wg.Go(func() { s.plugin(ch, key, t.plugin) })
		}
	}
	wg.Wait()
}

// Described is a Plugin that knows its library's describe() document,
// whose "metrics" (ABI 1.2) declare the type, unit and name of numbers of
// metrics(); *child.Instance.
type Described interface {
	Description() string
}

// plugin collects one instance's metrics() fields: those the library
// declares under their declared name, type and base unit, the others
// untyped as picomq_plugin_<path> (PluginFields).
func (s scrape) plugin(ch chan<- prometheus.Metric, key string, p Plugin) {
	ctx, cancel := context.WithTimeout(context.Background(), s.m.PluginTimeout)
	defer cancel()
	js, err := p.Metrics(ctx)
	var fields map[string]any
	if err == nil {
		err = json.Unmarshal([]byte(js), &fields)
	}
	ch <- prometheus.MustNewConstMetric(pluginUpDesc, prometheus.GaugeValue, b2f(err == nil), key)
	if err != nil {
		return
	}
	var decls []sdk.Metric
	if d, ok := p.(Described); ok {
		decls = Declarations(d.Description())
	}
	for _, m := range PluginMetrics(fields, decls) {
		desc := prometheus.NewDesc(m.Name, m.Help, []string{"sink_key"}, nil)
		ch <- prometheus.MustNewConstMetric(desc, m.Type, m.Value, key)
	}
}

// Declarations returns the valid metric declarations of a describe()
// document (ABI 1.2); none for an older plugin's. An invalid declaration
// (sdk.Metric.Check) is left out: its field is exported untyped.
func Declarations(describe string) []sdk.Metric {
	var d struct {
		Metrics []sdk.Metric `json:"metrics"`
	}
	if json.Unmarshal([]byte(describe), &d) != nil {
		return nil
	}
	out := d.Metrics[:0]
	for _, m := range d.Metrics {
		if m.Check() == nil {
			out = append(out, m)
		}
	}
	return out
}

// PluginMetric is one number of metrics() as /metrics exports it.
type PluginMetric struct {
	Name  string // picomq_plugin_...
	Help  string
	Type  prometheus.ValueType
	Value float64 // in the declared unit's base unit
}

// untypedHelp is the help of a field no declaration covers.
const untypedHelp = "Field of the plugin instance's metrics() JSON."

// PluginMetrics maps metrics() JSON to what /metrics exports: a declared
// field (its path in decls) as picomq_plugin_<name>, counter or gauge,
// its value times the declaration's scale; every other number untyped
// under its PluginFields name, as before ABI 1.2. Of two numbers mapping
// to one name, the declared one, then the first in path order, is kept.
func PluginMetrics(fields map[string]any, decls []sdk.Metric) []PluginMetric {
	byField := make(map[string]sdk.Metric, len(decls))
	for _, d := range decls {
		byField[d.Field] = d
	}
	var declared, untyped []PluginMetric
	walkNumbers(fields, func(path []string, v float64) {
		if d, ok := byField[strings.Join(path, ".")]; ok {
			t := prometheus.GaugeValue
			if d.Type == sdk.Counter {
				t = prometheus.CounterValue
			}
			declared = append(declared, PluginMetric{Name: "picomq_plugin_" + d.Name, Help: d.Help, Type: t, Value: d.Apply(v)})
			return
		}
		untyped = append(untyped, PluginMetric{Name: flatName(path), Help: untypedHelp, Type: prometheus.UntypedValue, Value: v})
	})
	seen := map[string]bool{}
	out := declared[:0:0]
	for _, m := range append(declared, untyped...) {
		if !seen[m.Name] {
			seen[m.Name] = true
			out = append(out, m)
		}
	}
	return out
}

var nameChars = regexp.MustCompile(`[^a-z0-9_]+`)

// PluginFields flattens metrics() JSON to metric names and values: every
// number, at any depth, as picomq_plugin_<path> with the path's keys
// joined by "_", lowercased, other characters replaced by "_". Strings,
// booleans, nulls and arrays are left out; of two fields mapping to one
// name, the first in key order is kept. These are the names of fields no
// declaration covers.
func PluginFields(fields map[string]any) map[string]float64 {
	out := map[string]float64{}
	walkNumbers(fields, func(path []string, v float64) {
		if name := flatName(path); !hasKey(out, name) {
			out[name] = v
		}
	})
	return out
}

func hasKey(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

// flatName is picomq_plugin_ and the path's keys, cleaned, joined by "_".
func flatName(path []string) string {
	name := "picomq_plugin"
	for _, k := range path {
		name += "_" + strings.Trim(nameChars.ReplaceAllString(strings.ToLower(k), "_"), "_")
	}
	return name
}

// walkNumbers calls fn for every number of m at any depth, in key order,
// with the keys leading to it.
func walkNumbers(m map[string]any, fn func(path []string, v float64)) {
	var walk func(path []string, m map[string]any)
	walk = func(path []string, m map[string]any) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := append(path[:len(path):len(path)], k)
			switch v := m[k].(type) {
			case float64:
				fn(p, v)
			case map[string]any:
				walk(p, v)
			}
		}
	}
	walk(nil, m)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
