package redshifttest

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// PreflightLimitsAreFatal: a record that cannot fit its column fails the
// batch FATAL before anything is uploaded, with a message naming topic,
// offset, column and size: never an opaque COPY failure, never a silent
// truncation.
func PreflightLimitsAreFatal(t *testing.T, d sinkdriver.Driver, e *Env) {
	rt := e.Start(d)
	t.Run("instances of several tables", func(t *testing.T) {
		varbyte := rt.Open("fit", e.Config(map[string]any{"target_table": e.Table("fit_{topic_segment[0]}")}))
		text := rt.Open("fit_text", e.Config(map[string]any{"target_table": e.Table("fitt_{topic_segment[0]}"), "payload_format": "text"}))
		static := rt.Open("fit_static", e.Config(map[string]any{"target_table": e.Table("fit_static")}))
		long := "orders." + strings.Repeat("t", 250) // 257 bytes; the table is fit_orders
		for _, tc := range []struct {
			name  string
			inst  sinkdriver.Instance
			table string
			b     func() sinkdriver.Batch
			want  string
		}{
			{"topic over 256 bytes", varbyte, "fit_orders", func() sinkdriver.Batch { return Batch(long, 7, 3) },
				`record at topic "` + long + `" offset 7 cannot be loaded into Redshift: column pico_topic needs 257 bytes but holds at most 256 (Redshift measures VARCHAR and VARBYTE in bytes)`},
			{"key over VARCHAR(MAX) in base64", varbyte, "fit_keys", func() sinkdriver.Batch {
				b := Batch("keys", 40, 3)
				b.Records[2].Key = make([]byte, 49150)
				return b
			}, `record at topic "keys" offset 42 cannot be loaded into Redshift: column pico_key needs 65536 bytes but holds at most 65535`},
			{"text payload over 65535 bytes", text, "fitt_big", func() sinkdriver.Batch {
				b := Batch("big", 0, 3)
				b.Records[1].Payload = []byte(`"` + strings.Repeat("ü", 32767) + `"`)
				return b
			}, `record at topic "big" offset 1 cannot be loaded into Redshift: column payload needs 65536 bytes but holds at most 65535`},
			// A fixed target_table resolves whatever the topic; the topic still
			// goes into id (VARCHAR), so it must be text.
			{"topic not UTF-8, fixed target_table", static, "fit_static", func() sinkdriver.Batch { return Batch("orders.\xff\xfe", 3, 3) },
				`record at topic "orders.\xff\xfe" offset 3 cannot be loaded into Redshift: column id would hold the topic name, which is not valid UTF-8 (id is a VARCHAR)`},
			{"text payload not UTF-8", text, "fitt_bin", func() sinkdriver.Batch {
				b := Batch("bin", 0, 3)
				b.Schema = "raw"
				b.Records[2].Payload = []byte{'o', 'k', 0xff}
				return b
			}, `record at topic "bin" offset 2 cannot be loaded into Redshift: column payload is not valid UTF-8`},
			{"text payload with NUL", text, "fitt_nul", func() sinkdriver.Batch {
				b := Batch("nul", 0, 3)
				b.Schema = "text"
				b.Records[0].Payload = []byte("a\x00b")
				return b
			}, `record at topic "nul" offset 0 cannot be loaded into Redshift: column payload contains a NUL character`},
		} {
			if e.Emu != nil {
				e.Emu.ResetStatements()
			}
			before := sinkdriver.SinkMetrics(t, tc.inst)["files_uploaded"]
			err := tc.inst.Consume(tc.b())
			WantStatus(t, err, hostclient.StatusFatal, tc.want)
			if e.Emu != nil { // the statement log is the emulator's
				if got := e.Emu.CountStatements(`(?i)^(begin|lock|copy|insert)`); got != 0 {
					t.Errorf("%s: a load ran: %s", tc.name, FirstWords(e.Emu))
				}
			}
			if n := sinkdriver.SinkMetrics(t, tc.inst)["files_uploaded"]; n != before {
				t.Errorf("%s: uploaded a file", tc.name)
			}
			if objs := e.Objects(""); len(objs) != 0 {
				t.Errorf("%s: objects %v", tc.name, objs)
			}
			if e.Count(e.Table(tc.table)) != 0 {
				t.Errorf("%s: rows visible", tc.name)
			}
		}
	})

	// The first batch of a fresh instance, each in a world of its own:
	// nothing at all reaches the cluster.
	for _, tt := range []struct {
		name   string
		config map[string]any
		batch  func() sinkdriver.Batch
		want   string
	}{
		{"topic over 256 bytes", nil, func() sinkdriver.Batch { return Batch(strings.Repeat("t", 257), 0, 3) },
			`offset 0 cannot be loaded into Redshift: column pico_topic needs 257 bytes but holds at most 256`},
		{"text payload over 65535 bytes", map[string]any{"payload_format": "text"}, func() sinkdriver.Batch {
			b := Batch("big", 0, 3)
			b.Records[2].Payload = []byte(`"` + strings.Repeat("a", 65535) + `"`)
			return b
		}, `record at topic "big" offset 2 cannot be loaded into Redshift: column payload needs 65537 bytes but holds at most 65535`},
		{"text payload not UTF-8", map[string]any{"payload_format": "text"}, func() sinkdriver.Batch {
			b := Batch("bin", 0, 3)
			b.Schema = "raw"
			b.Records[1].Payload = []byte{0xff, 0xfe}
			return b
		}, `record at topic "bin" offset 1 cannot be loaded into Redshift: column payload is not valid UTF-8`},
		{"key over VARCHAR(MAX) in base64", nil, func() sinkdriver.Batch {
			b := Batch("keys", 0, 3)
			b.Records[2].Key = make([]byte, 50000)
			return b
		}, `record at topic "keys" offset 2 cannot be loaded into Redshift: column pico_key needs 66668 bytes but holds at most 65535`},
	} {
		t.Run("first batch/"+tt.name, func(t *testing.T) {
			e := NewEnv(t)
			fit := e.Table("fit")
			cfg := e.Config(map[string]any{"target_table": fit})
			for k, v := range tt.config {
				cfg[k] = v
			}
			inst := e.Start(d).Open("fit", cfg)
			if e.Emu != nil {
				e.Emu.ResetStatements()
			}
			se := asStatus(t, inst.Consume(tt.batch()))
			if !strings.Contains(se.Message, tt.want) {
				t.Fatalf("got  %v\nwant %s", se.Message, tt.want)
			}
			if se.Code != hostclient.StatusFatal {
				t.Fatalf("status %v, want FATAL", se.Code)
			}
			if e.Emu != nil { // the statement log is the emulator's
				if n := len(e.Emu.Statements()); n != 0 {
					t.Errorf("%d statements sent: %v", n, e.Emu.Statements())
				}
			}
			if objs := e.Objects(""); len(objs) != 0 {
				t.Errorf("uploaded %v", objs)
			}
			if m := sinkdriver.SinkMetrics(t, inst); m["files_uploaded"] != 0 {
				t.Errorf("files_uploaded %v", m["files_uploaded"])
			}
			if n := e.Count(fit); n != 0 {
				t.Errorf("%d rows visible", n)
			}
		})
	}

	// An older table with a narrower pico_topic than the sink would create
	// is checked before upload too.
	t.Run("narrow existing column", func(t *testing.T) {
		narrow := e.Table("narrow")
		for _, tbl := range []string{narrow, "staging_" + narrow} {
			e.Exec(`CREATE TABLE "` + tbl + `" (id VARCHAR(512), pico_offset VARCHAR(20), pico_timestamp VARCHAR(20), pico_topic VARCHAR(8), ` +
				`pico_partition BIGINT, pico_key VARCHAR(MAX), payload VARBYTE(16777216), created_at VARCHAR)`)
		}
		inst := rt.Open("narrow", e.Config(map[string]any{"target_table": narrow}))
		consume(t, inst, Batch("short", 0, 2))
		se := asStatus(t, inst.Consume(Batch("longer.topic", 0, 2)))
		if se.Code != hostclient.StatusFatal || !strings.Contains(se.Message, "column pico_topic needs 12 bytes but holds at most 8") {
			t.Fatalf("%v", se)
		}
	})
}
