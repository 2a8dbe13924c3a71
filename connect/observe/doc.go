// Package observe is picomq-connect's HTTP endpoint: /healthz, /readyz,
// /status (per sink: state, last error, lag per topic-partition) and
// /metrics in the Prometheus text format.
//
// Metrics implements pipeline.Observer, counting every delivery attempt
// (and, for blocks that decode a binary format, the records decoded, the
// time it took and each decode retry; and per sink and table the newest
// committed record timestamp and the commit duration, table being the
// destination template the plugin's describe() marks, one value per sink);
// at scrape time it adds each sink's state and lag, read from the sinks,
// and the numeric fields of each plugin instance's metrics() JSON, fetched
// with a timeout so a slow plugin cannot hang a scrape. Everything is
// registered in the package's own registry, never the global default.
// Labels are bounded: sink_key and topic come from the definitions (a
// pattern's matches are the broker's topics), partition is bounded by the
// topics' partitions, outcome and state are enumerations, table is one
// value per sink. /status adds each plugin's last commits (metrics()'s
// "last_commits", fetched with the same timeout); /readyz asks no plugin.
//
// File map: metrics.go (the collectors), http.go (handlers, Serve).
package observe
