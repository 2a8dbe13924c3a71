package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Status is the /status document.
type Status struct {
	Sinks []SinkStatus `json:"sinks"`
}

// SinkStatus is one sink in /status.
type SinkStatus struct {
	Key   string         `json:"key"`
	State pipeline.State `json:"state"`
	// LastError is the error that put the sink in state error; the plugin
	// has redacted its secrets, and the runtime adds no config values.
	LastError  string            `json:"last_error,omitempty"`
	Lag        int64             `json:"lag"` // the sum over its partitions
	Partitions []PartitionStatus `json:"partitions"`
	// Table is the sink's destination as configured (the table label of
	// the freshness metrics); absent before its first commit, or when the
	// plugin declares no destination key.
	Table string `json:"table,omitempty"`
	// LastCommits is the newest commit per destination table the plugin
	// instance reports in metrics() (a Delta version, a Redshift load);
	// null when the plugin reports none or did not answer within
	// PluginTimeout, empty before its first commit.
	LastCommits []sdk.Commit `json:"last_commits"`
}

// PartitionStatus is one topic-partition of a sink in /status. Unknown
// values are null.
type PartitionStatus struct {
	Topic           string     `json:"topic"`
	Partition       int32      `json:"partition"`
	CommittedOffset *int64     `json:"committed_offset"`
	HighWatermark   *int64     `json:"high_watermark"`
	Lag             int64      `json:"lag"`
	LastBatchTime   *time.Time `json:"last_batch_time"`
}

// Status returns the state of every sink added, without asking the
// plugins anything (/readyz).
func (m *Metrics) Status() Status { return m.status(nil) }

// StatusWithCommits is Status with each sink's LastCommits, from its
// plugin's metrics(), each call bounded by PluginTimeout (/status).
func (m *Metrics) StatusWithCommits(ctx context.Context) Status {
	ts := m.targets()
	commits := make([][]sdk.Commit, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		if t.plugin != nil {
			wg.Go(func() { commits[i] = m.lastCommits(ctx, t.plugin) })
		}
	}
	wg.Wait()
	return m.status(commits)
}

// lastCommits reads "last_commits" of p's metrics(); nil when p does not
// answer in time or reports none.
func (m *Metrics) lastCommits(ctx context.Context, p Plugin) []sdk.Commit {
	ctx, cancel := context.WithTimeout(ctx, m.PluginTimeout)
	defer cancel()
	js, err := p.Metrics(ctx)
	if err != nil {
		return nil
	}
	var doc struct {
		LastCommits []sdk.Commit `json:"last_commits"`
	}
	if json.Unmarshal([]byte(js), &doc) != nil {
		return nil
	}
	return doc.LastCommits
}

func (m *Metrics) status(commits [][]sdk.Commit) Status {
	st := Status{Sinks: []SinkStatus{}}
	m.mu.Lock()
	tables := maps.Clone(m.tables)
	m.mu.Unlock()
	for i, t := range m.targets() {
		state, err := t.sink.State()
		s := SinkStatus{Key: t.sink.Key(), State: state, Partitions: []PartitionStatus{}}
		if err != nil {
			s.LastError = err.Error()
		}
		for _, p := range t.sink.Partitions() {
			ps := PartitionStatus{Topic: p.Topic, Partition: p.Partition, Lag: p.Lag()}
			if p.Committed >= 0 {
				ps.CommittedOffset = &p.Committed
			}
			if p.HighWatermark >= 0 {
				ps.HighWatermark = &p.HighWatermark
			}
			if !p.LastBatch.IsZero() {
				t := p.LastBatch.UTC()
				ps.LastBatchTime = &t
			}
			s.Lag += ps.Lag
			s.Partitions = append(s.Partitions, ps)
		}
		s.Table = tables[s.Key]
		if i < len(commits) {
			s.LastCommits = commits[i]
		}
		st.Sinks = append(st.Sinks, s)
	}
	return st
}

// Handler serves /healthz, /readyz, /status and /metrics.
//
// /healthz is liveness: 200 while the process serves at all. A sink in
// error is not a reason to restart the process (the failed batch would
// fail again); the exit code and /readyz say it. /readyz is 200 when every
// sink is running, else 503 naming the others.
func Handler(m *Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		var notReady []SinkStatus
		for _, s := range m.Status().Sinks {
			if s.State != pipeline.StateRunning {
				notReady = append(notReady, s)
			}
		}
		if len(notReady) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			for _, s := range notReady {
				fmt.Fprintf(w, "%s %s\n", s.Key, s.State)
			}
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(m.StatusWithCommits(r.Context()))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	return mux
}

// Server is the endpoint on a bound address.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen binds addr (host:port; port 0 picks one) now, so that a bad or
// taken address fails at start, and serves h on it. A later serving
// failure is logged to log; the runtime goes on consuming without its
// endpoint.
func Listen(addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http endpoint stopped", "event", "http_failed", "addr", addr, "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting requests in progress finish for up to
// a second.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}
