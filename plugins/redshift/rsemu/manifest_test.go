package rsemu_test

import (
	"fmt"
	"strings"
	"testing"
)

// manifestJSON lists keys of the test bucket as manifest entries; length
// gives each entry's meta.content_length (-1 leaves meta out), mandatory
// its flag.
func (e *env) manifestJSON(entries ...string) []byte {
	return []byte(`{"entries": [` + strings.Join(entries, ",\n") + `]}`)
}

func (e *env) entry(key string, length int, mandatory bool) string {
	meta := ""
	if length >= 0 {
		meta = fmt.Sprintf(`, "meta": {"content_length": %d}`, length)
	}
	return fmt.Sprintf(`{"url": %q, "mandatory": %t%s}`, e.url(key), mandatory, meta)
}

// COPY … MANIFEST loads exactly the files the manifest lists (a file listed
// twice twice), not everything under a prefix, as Redshift documents.
func TestCopyManifestLoadsTheListedFiles(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	a, b, c := writeParquet(t, sinkRows("m", 0, 3)), writeParquet(t, sinkRows("m", 3, 4)), writeParquet(t, sinkRows("m", 7, 5))
	e.put(t, "grp/a.parquet", a)
	e.put(t, "grp/b.parquet", b)
	e.put(t, "grp/c.parquet", c) // under the same prefix, not listed
	e.put(t, "grp.manifest", e.manifestJSON(e.entry("grp/a.parquet", len(a), true), e.entry("grp/b.parquet", len(b), true)))

	tag := e.exec(t, conn, e.copySQL("stage", sinkCols, "grp.manifest")+" MANIFEST")
	if tag.RowsAffected() != 7 {
		t.Fatalf("COPY tag %q, want 7 rows", tag)
	}
	if n := count(t, e, conn, "stage"); n != 7 {
		t.Fatalf("%d rows, want 7 (only the listed files)", n)
	}
	e.exec(t, conn, `TRUNCATE stage`)
	e.put(t, "twice.manifest", e.manifestJSON(e.entry("grp/a.parquet", len(a), true), e.entry("grp/a.parquet", len(a), true)))
	e.exec(t, conn, e.copySQL("stage", sinkCols, "twice.manifest")+" MANIFEST STATUPDATE OFF")
	if n := count(t, e, conn, "stage"); n != 6 {
		t.Fatalf("a file listed twice gave %d rows, want 6", n)
	}
	// Without MANIFEST the manifest is read as a data file.
	_, err := conn.Exec(e.ctx, e.copySQL("stage", sinkCols, "grp.manifest"))
	pgErr(t, err, "XX000", "Spectrum Scan Error")
}

// What a manifest must hold, and what it may leave out.
func TestCopyManifestErrors(t *testing.T) {
	e := newEnv(t)
	conn := e.connect(t)
	createSinkTable(t, e, conn, "stage")
	a := writeParquet(t, sinkRows("m", 0, 3))
	e.put(t, "f/a.parquet", a)
	copyManifest := func(name string, body []byte) error {
		e.put(t, name, body)
		_, err := conn.Exec(e.ctx, e.copySQL("stage", sinkCols, name)+" MANIFEST")
		return err
	}
	// An optional file that is missing is skipped.
	if err := copyManifest("opt.manifest", e.manifestJSON(e.entry("f/a.parquet", len(a), true), e.entry("f/gone.parquet", 10, false))); err != nil {
		t.Fatalf("a missing optional file: %v", err)
	}
	if n := count(t, e, conn, "stage"); n != 3 {
		t.Fatalf("%d rows", n)
	}
	e.exec(t, conn, `TRUNCATE stage`)
	for _, tc := range []struct {
		name, want string
		body       []byte
	}{
		{"mandatory-missing", "mandatory file " + e.url("f/gone.parquet") + " is not found",
			e.manifestJSON(e.entry("f/a.parquet", len(a), true), e.entry("f/gone.parquet", 10, true))},
		{"none-found", "None of the files listed in the manifest were found", e.manifestJSON(e.entry("f/gone.parquet", 10, false))},
		{"no-content-length", "has no meta.content_length", e.manifestJSON(e.entry("f/a.parquet", -1, true))},
		{"not-json", "Manifest file is not in correct json format", []byte(`{"entries": [`)},
		{"no-entries", "Manifest file is not in correct json format", []byte(`{"files": []}`)},
		{"prefix-url", "does not name an object", e.manifestJSON(e.entry("f/", 1, true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pgErr(t, copyManifest(tc.name+".manifest", tc.body), "XX000", tc.want)
			if n := count(t, e, conn, "stage"); n != 0 {
				t.Fatalf("a failed COPY left %d rows", n)
			}
		})
	}
	t.Run("wrong-content-length", func(t *testing.T) {
		err := copyManifest("len.manifest", e.manifestJSON(e.entry("f/a.parquet", len(a)+1, true)))
		pe := pgErr(t, err, "XX000", "Spectrum Scan Error")
		if !strings.Contains(pe.Detail, "content_length") {
			t.Fatalf("detail %s", pe.Detail)
		}
	})
	t.Run("manifest-missing", func(t *testing.T) {
		_, err := conn.Exec(e.ctx, e.copySQL("stage", sinkCols, "absent.manifest")+" MANIFEST")
		pgErr(t, err, "XX000", "S3ServiceException")
	})
}
