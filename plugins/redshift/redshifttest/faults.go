package redshifttest

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostdriver"
	"github.com/picomq/heavy-sinks/shared/testenv/sinkdriver"
)

// PermanentFaultsFailAtOnceWithNothingVisible: a permanent fault fails the
// batch after one attempt, whatever max_retries says, with nothing
// partially visible: no rows, nothing in staging, no file. The status is
// RETRY (an operator can fix a role or a grant; the offset stays where it
// is meanwhile) and the message names the step.
func PermanentFaultsFailAtOnceWithNothingVisible(t *testing.T, d sinkdriver.Driver, e *Env) {
	emu := e.NeedEmulator("its faults are injected")
	// Faults on a table that exists and is cached, in one instance.
	t.Run("cached tables", func(t *testing.T) {
		inst := e.Start(d).Open("permanent", e.Config(map[string]any{"target_table": "perm_{topic}", "max_retries": 5}))
		for _, tc := range []struct {
			topic string
			stmt  string
			err   *rsemu.Error
			want  string
		}{
			{"copy", "COPY", &rsemu.Error{Code: "XX000", Message: "Spectrum Scan Error", Detail: "the file is not Parquet"},
				"Redshift COPY failed after 1 attempt: ERROR: Spectrum Scan Error (SQLSTATE XX000); detail: the file is not Parquet"},
			{"insert", "INSERT", &rsemu.Error{Code: "XX000", Message: "Invalid digit, Value 'x'"},
				"Redshift INSERT failed after 1 attempt: ERROR: Invalid digit, Value 'x' (SQLSTATE XX000)"},
			{"cleanup", "DELETE", &rsemu.Error{Code: "42501", Message: "permission denied for relation staging_perm_cleanup"},
				"Redshift staging cleanup failed after 1 attempt: ERROR: permission denied for relation staging_perm_cleanup (SQLSTATE 42501)"},
			{"lock", "LOCK", &rsemu.Error{Code: "42501", Message: "permission denied"},
				"Redshift LOCK failed after 1 attempt: ERROR: permission denied (SQLSTATE 42501)"},
		} {
			consume(t, inst, Batch(tc.topic, 100, 1)) // the table exists and is cached
			emu.ResetStatements()
			emu.FailNext(`^`+tc.stmt, 1, tc.err)
			err := inst.Consume(Batch(tc.topic, 0, 30))
			wantStatus(t, err, hostdriver.StatusRetry, tc.want)
			if n := emu.CountStatements(`(?i)^begin`); n != 1 {
				t.Errorf("%s: %d transactions, want 1: a permanent error is not retried", tc.topic, n)
			}
			if n := e.Count("perm_" + tc.topic); n != 1 {
				t.Errorf("%s: %d rows, want only the earlier one", tc.topic, n)
			}
			if n := e.Count("staging_perm_" + tc.topic); n != 0 {
				t.Errorf("%s: staging holds %d rows", tc.topic, n)
			}
			if objs := e.Objects(""); len(objs) != 0 {
				t.Errorf("%s: files left in S3: %v", tc.topic, objs)
			}
		}
	})
	// Faults on the first batch of a fresh instance, each in a world of its
	// own; the message is the start of the plugin's.
	for _, tt := range []struct {
		name   string
		config map[string]any
		fault  func(e *rsemu.Server)
		want   string
	}{
		{"role not attached to the cluster", map[string]any{"aws_iam_role": "arn:aws:iam::123456789012:role/NotAttached"}, nil,
			"Redshift COPY failed after 1 attempt: ERROR: Not authorized to get credentials of role arn:aws:iam::123456789012:role/NotAttached (SQLSTATE XX000)"},
		{"INSERT rejected", nil, func(e *rsemu.Server) {
			e.FailNext(`^INSERT`, 1, &rsemu.Error{Code: "XX000", Message: "Invalid digit, Value 'x'"})
		}, "Redshift INSERT failed after 1 attempt: ERROR: Invalid digit, Value 'x' (SQLSTATE XX000)"},
		{"staging cleanup denied", nil, func(e *rsemu.Server) {
			e.FailNext(`^DELETE`, 1, &rsemu.Error{Code: "42501", Message: "permission denied for relation staging_perm"})
		}, "Redshift staging cleanup failed after 1 attempt: ERROR: permission denied for relation staging_perm (SQLSTATE 42501)"},
		{"LOCK denied", nil, func(e *rsemu.Server) {
			e.FailNext(`^LOCK`, 1, &rsemu.Error{Code: "42501", Message: "permission denied"})
		}, "Redshift LOCK failed after 1 attempt: ERROR: permission denied (SQLSTATE 42501)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEnv(t)
			cfg := e.Config(map[string]any{"target_table": "perm", "max_retries": 5})
			for k, v := range tt.config {
				cfg[k] = v
			}
			inst := e.Start(d).Open("permanent", cfg)
			e.Emu.ResetStatements()
			if tt.fault != nil {
				tt.fault(e.Emu)
			}
			err := inst.Consume(Batch("orders", 0, 10))
			se := asStatus(t, err)
			if !strings.HasPrefix(se.Message, tt.want) {
				t.Fatalf("got  %v\nwant %s", se.Message, tt.want)
			}
			if se.Code != hostdriver.StatusRetry {
				t.Fatalf("status %v", se.Code)
			}
			if n := e.Emu.CountStatements(`(?i)^begin`); n != 1 {
				t.Errorf("%d transactions, want 1: a permanent error is not retried", n)
			}
			if n := e.Count("perm"); n != 0 {
				t.Errorf("%d rows visible in perm", n)
			}
			if n := e.Count("staging_perm"); n != 0 {
				t.Errorf("%d rows left in staging", n)
			}
			if objs := e.Objects(""); len(objs) != 0 {
				t.Errorf("files left in S3: %v", objs)
			}
		})
	}
}
