package jsonw_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// The strings a record's values are made of: short ASCII (names, ids),
// longer text with a few escapes, and non-ASCII text.
var benchStrings = map[string][]byte{
	"ascii16": []byte("order-0000012345"),
	"text256": []byte(`{"note": "a customer's line\twith tabs", "x": 1} lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut.` + "\n"),
	"utf8":    []byte("Grüße aus Zürich – 東京の天気は晴れ 😀, ça va?"),
}

func BenchmarkAppendString(b *testing.B) {
	for _, name := range []string{"ascii16", "text256", "utf8"} {
		s := benchStrings[name]
		b.Run(name, func(b *testing.B) {
			dst := make([]byte, 0, 1024)
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				dst, _ = jsonw.AppendString(dst[:0], s)
			}
		})
	}
}

func BenchmarkAppendFloat(b *testing.B) {
	dst := make([]byte, 0, 64)
	for b.Loop() {
		dst = jsonw.AppendFloat(dst[:0], 12345.678, 64)
	}
}
