package objstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		want objstore.Location
	}{
		{"file:///data/t", objstore.Location{Backend: objstore.BackendLocal, Path: "/data/t"}},
		{"file://localhost/data/t/", objstore.Location{Backend: objstore.BackendLocal, Path: "/data/t/"}},
		{"s3://b/a/t/", objstore.Location{Backend: objstore.BackendS3, Bucket: "b", Path: "a/t"}},
		{"S3A://b", objstore.Location{Backend: objstore.BackendS3, Bucket: "b"}},
		{"az://c/t", objstore.Location{Backend: objstore.BackendAzure, Bucket: "c", Path: "t"}},
		{"abfss://c@acct.dfs.core.windows.net/t", objstore.Location{Backend: objstore.BackendAzure, Bucket: "c", Account: "acct",
			Path: "t", AzureEndpoint: "https://acct.blob.core.windows.net"}},
		{"gs://b/t", objstore.Location{Backend: objstore.BackendGCS, Bucket: "b", Path: "t"}},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			got, err := objstore.ParseLocation(tc.uri)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.uri {
				t.Errorf("String() = %q", got.String())
			}
			got = objstore.Location{Backend: got.Backend, Bucket: got.Bucket, Account: got.Account, Path: got.Path, AzureEndpoint: got.AzureEndpoint}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"file:///x", "s3://b/p", "az://c/p", "abfss://c@a.dfs.core.windows.net/p", "gs://b", "/x", "ftp://x", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		loc, err := objstore.ParseLocation(uri)
		if err != nil {
			var ue *objstore.URIError
			if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "Invalid table URI") {
				t.Fatalf("%q: untyped error %v", uri, err)
			}
			return
		}
		if loc.Backend == 0 || loc.String() != uri || (loc.Backend != objstore.BackendLocal && loc.Bucket == "") {
			t.Fatalf("%q: %+v", uri, loc)
		}
	})
}
