package rsiam

import "strings"

// endpointSuffixes are the DNS suffixes of Redshift endpoints.
var endpointSuffixes = []string{
	".redshift.amazonaws.com", ".redshift-serverless.amazonaws.com",
	".redshift.amazonaws.com.cn", ".redshift-serverless.amazonaws.com.cn",
}

// RegionOf returns the region an AWS Redshift endpoint host name carries,
// or "" for any other host:
//
//	<cluster>.<id>.<region>.redshift.amazonaws.com
//	<workgroup>.<account>.<region>.redshift-serverless.amazonaws.com
//
// (and the same under amazonaws.com.cn).
func RegionOf(host string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, suffix := range endpointSuffixes {
		rest, ok := strings.CutSuffix(host, suffix)
		if !ok {
			continue
		}
		labels := strings.Split(rest, ".")
		if len(labels) < 3 || labels[len(labels)-1] == "" {
			return ""
		}
		return labels[len(labels)-1]
	}
	return ""
}
