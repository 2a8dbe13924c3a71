package rsql

import (
	"encoding/json"
)

// ManifestFile is one data file a COPY manifest lists.
type ManifestFile struct {
	URL  string // s3://bucket/key of the whole object
	Size int64  // its size in bytes
}

// Manifest is the text of a COPY manifest listing files, in Redshift's
// format ("Using a manifest to specify data files"): every entry mandatory,
// so a file that is missing fails the COPY instead of loading less, and
// with meta.content_length, which Redshift requires for Parquet files.
func Manifest(files []ManifestFile) []byte {
	type meta struct {
		ContentLength int64 `json:"content_length"`
	}
	type entry struct {
		URL       string `json:"url"`
		Mandatory bool   `json:"mandatory"`
		Meta      meta   `json:"meta"`
	}
	m := struct {
		Entries []entry `json:"entries"`
	}{Entries: make([]entry, len(files))}
	for i, f := range files {
		m.Entries[i] = entry{URL: f.URL, Mandatory: true, Meta: meta{ContentLength: f.Size}}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	return b
}
