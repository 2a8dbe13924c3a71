package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/picomq/heavy-sinks/connect/pipeline"
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

// Status returns the state of every sink added.
func (m *Metrics) Status() Status {
	st := Status{Sinks: []SinkStatus{}}
	for _, t := range m.targets() {
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
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(m.Status())
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
