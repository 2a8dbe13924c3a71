package redshifttest

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
)

const uuidV7 = `[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`

var uuidFile = regexp.MustCompile(`^` + uuidV7 + `\.parquet$`)

// ArchiveOnAndOff: archive = true keeps each loaded file under
// <prefix>/archive/messages/ (archive/messages/ for an empty prefix), a
// Parquet file of the chunk's rows; archive = false deletes it.
func ArchiveOnAndOff(t *testing.T, d sinkdriver.Driver, e *Env) {
	t.Run("on and off side by side", func(t *testing.T) {
		rt := e.Start(d)
		archOn, archOff := e.Table("arch_on"), e.Table("arch_off")
		on := rt.Open("archive_on", e.Config(map[string]any{"target_table": archOn, "archive": true, "batch_size": 10, "s3_prefix": "/on/files/"}))
		off := rt.Open("archive_off", e.Config(map[string]any{"target_table": archOff, "batch_size": 10, "s3_prefix": "off"}))
		consume(t, on, Batch("orders", 0, 25))
		consume(t, off, Batch("orders", 0, 25))
		e.ExactlyOnce(archOn, "orders", 0, 24)
		e.ExactlyOnce(archOff, "orders", 0, 24)
		keyRE := regexp.MustCompile(`^on/files/archive/messages/` + uuidV7 + `\.parquet$`)
		objs := e.Objects("")
		if len(objs) != 3 {
			t.Fatalf("objects %v, want the three archived files of archive_on only", objs)
		}
		for _, k := range objs {
			if !keyRE.MatchString(k) {
				t.Errorf("object %q is not on/files/archive/messages/<uuid v7>.parquet", k)
			}
		}
		if m := sinkdriver.SinkMetrics(t, on); m["files_archived"] != 3 || m["files_deleted"] != 0 {
			t.Errorf("archive_on metrics %v", m)
		}
		if m := sinkdriver.SinkMetrics(t, off); m["files_archived"] != 0 || m["files_deleted"] != 3 {
			t.Errorf("archive_off metrics %v", m)
		}
	})
	for _, prefix := range []string{"redshift/orders", ""} {
		t.Run("archived files hold the rows/prefix="+prefix, func(t *testing.T) {
			e := NewEnv(t)
			arch := e.Table("arch")
			inst := e.Start(d).Open("archive", e.Config(map[string]any{"target_table": arch, "archive": true, "batch_size": 10, "s3_prefix": prefix}))
			consume(t, inst, Batch("orders", 0, 25))
			dir := "archive/messages/"
			if prefix != "" {
				dir = prefix + "/" + dir
			}
			objs := e.Objects("")
			if len(objs) != 3 {
				t.Fatalf("objects %v, want the three archived files only", objs)
			}
			rows := 0
			for _, key := range objs {
				name, ok := strings.CutPrefix(key, dir)
				if !ok || !uuidFile.MatchString(name) {
					t.Errorf("object %q is not %s<uuid v7>.parquet", key, dir)
					continue
				}
				out, err := e.S3.GetObject(e.Ctx, &s3.GetObjectInput{Bucket: aws.String(e.Bucket), Key: aws.String(e.prefix + key)})
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(out.Body)
				out.Body.Close()
				f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				rows += int(f.NumRows())
			}
			if rows != 25 {
				t.Errorf("archived files hold %d rows", rows)
			}
			if e.Count(arch) != 25 {
				t.Error("rows missing")
			}
			if m := sinkdriver.SinkMetrics(t, inst); m["files_archived"] != 3 || m["files_deleted"] != 0 {
				t.Errorf("metrics %v", m)
			}
		})
	}
	t.Run("no archive leaves no files", func(t *testing.T) {
		e := NewEnv(t)
		inst := e.Start(d).Open("no_archive", e.Config(map[string]any{"target_table": e.Table("noarch"), "batch_size": 10}))
		consume(t, inst, Batch("orders", 0, 25))
		if objs := e.Objects(""); len(objs) != 0 {
			t.Fatalf("objects %v", objs)
		}
	})
}
