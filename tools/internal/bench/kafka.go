package bench

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// SplitList splits a comma-separated flag, dropping empty entries.
func SplitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// CompressionCodec maps a -compression flag to a producer codec.
func CompressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("-compression %q: want none, snappy, lz4 or zstd", name)
}

// LagTrend prints lags sampled at a steady interval and whether they grow:
// the last third's mean against the first third's (growing when more than
// twice it plus slack, slack absorbing a batch or two in flight).
func LagTrend(lags []int64, slack int64) string {
	if len(lags) < 3 {
		return fmt.Sprint(lags)
	}
	mean := func(s []int64) float64 {
		var t int64
		for _, v := range s {
			t += v
		}
		return float64(t) / float64(len(s))
	}
	n := len(lags) / 3
	first, last := mean(lags[:n]), mean(lags[len(lags)-n:])
	verdict := "not growing"
	if last > 2*first+float64(slack) {
		verdict = "GROWING"
	}
	return fmt.Sprintf("%v (first third mean %.0f, last third %.0f: %s)", lags, first, last, verdict)
}
