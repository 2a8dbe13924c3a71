package rsiam_test

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/internal/rsiam"
)

func TestRegionOf(t *testing.T) {
	for host, want := range map[string]string{
		"cluster.abc123.eu-west-1.redshift.amazonaws.com":              "eu-west-1",
		"Cluster.ABC123.EU-WEST-1.Redshift.AmazonAWS.com.":             "eu-west-1",
		"wg.123456789012.us-east-2.redshift-serverless.amazonaws.com":  "us-east-2",
		"c.x.cn-north-1.redshift.amazonaws.com.cn":                     "cn-north-1",
		"abc123.eu-west-1.redshift.amazonaws.com":                      "", // no cluster label
		"eu-west-1.redshift.amazonaws.com":                             "",
		"127.0.0.1":                                                    "",
		"cluster.abc123.eu-west-1.redshift.amazonaws.com.evil.example": "",
		"redshift.amazonaws.com":                                       "",
		"a.b..redshift.amazonaws.com":                                  "",
		"":                                                             "",
	} {
		if got := rsiam.RegionOf(host); got != want {
			t.Errorf("RegionOf(%q) = %q, want %q", host, got, want)
		}
	}
}

func FuzzRegionOf(f *testing.F) {
	f.Add("cluster.abc123.eu-west-1.redshift.amazonaws.com")
	f.Add("wg.1.us-east-2.redshift-serverless.amazonaws.com.cn")
	f.Fuzz(func(t *testing.T, host string) {
		r := rsiam.RegionOf(host)
		if r == "" {
			return
		}
		// A region is one whole label of the host, before a Redshift suffix.
		if strings.Contains(r, ".") || !strings.Contains(strings.ToLower(host), "."+r+".redshift") {
			t.Fatalf("RegionOf(%q) = %q, not the label before the Redshift suffix", host, r)
		}
	})
}
