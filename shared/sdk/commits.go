package sdk

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Commit is a destination's newest commit made by an instance: the Delta
// table version or the Redshift load. metrics() lists them as an array
// under "last_commits" (an array, so exporters that turn every number of
// metrics() into a metric leave it out: tables are not a bounded label
// set), and picomq-connect's /status shows them per sink.
type Commit struct {
	// Table is the resolved destination (a table URI, a table name).
	Table string `json:"table"`
	// Version is the Delta table version committed; absent for sinks
	// without versions.
	Version *int64 `json:"version,omitempty"`
	// Load names the load committed where there is no version: the
	// Redshift sink's S3 URL of the Parquet file or manifest it COPYed.
	Load string `json:"load,omitempty"`
	// Records is how many records the commit wrote.
	Records int64 `json:"records"`
	// Time is when the commit was acknowledged, UTC.
	Time time.Time `json:"time"`
}

// CommitReporter is implemented by sinks that report their newest commit
// per destination. Like MetricsReporter it is called concurrently with
// Consume and must be safe for that. The list is bounded by the
// destinations the instance wrote to.
type CommitReporter interface {
	LastCommits() []Commit
}

// Commits keeps the newest Commit per table for a CommitReporter: Set
// after each commit, List for LastCommits. Neither waits for anything
// but the other. The zero value is ready; a nil *Commits records nothing
// (a table built without its sink, in a test).
type Commits struct {
	mu sync.Mutex
	m  map[string]Commit
}

// Set records c as the newest commit to c.Table.
func (cs *Commits) Set(c Commit) {
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[string]Commit{}
	}
	cs.m[c.Table] = c
}

// List returns the newest commit to each table, by table.
func (cs *Commits) List() []Commit {
	if cs == nil {
		return []Commit{}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]Commit, 0, len(cs.m))
	for _, c := range cs.m {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Commit) int { return strings.Compare(a.Table, b.Table) })
	return out
}
