package pipeline

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"runtime"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The consumer's pool gives kgo the buffers it decompresses record batches
// into and takes them back: decompressing batch after batch, as a steady
// stream does, allocates next to nothing once a buffer went round, where
// kgo alone allocates a buffer per batch.
func TestDecompressBuffersReused(t *testing.T) {
	var raw []byte
	for i := 0; len(raw) < 48<<10; i++ {
		raw = fmt.Appendf(raw, `{"n":%d,"text":"a record of a steady stream"}`, i)
	}
	src := s2.EncodeSnappy(nil, raw)
	d := kgo.DefaultDecompressor(records)
	once := func() {
		out, err := d.Decompress(src, kgo.CodecSnappy)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, raw) {
			t.Fatal("decompressed batch differs from the one compressed")
		}
		// As kgo does once every record of the batch was recycled.
		clear(out[:cap(out)])
		records.PutDecompressBytes(out)
	}
	once()
	const n = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		once()
	}
	runtime.ReadMemStats(&after)
	// Under the race detector sync.Pool drops a quarter of what it is
	// given: still far below a buffer per batch.
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > uint64(len(raw))/2 {
		t.Errorf("%d bytes allocated per decompressed batch of %d: the buffers are not reused", per, len(raw))
	}
}

// A buffer fits the snappy batch it is asked for (kgo's snappy decodes
// into it only then); a batch whose size its codec does not say gets none
// (a guess from the compressed size is far off for JSON); a batch above the largest
// class, or a buffer a codec grew to another size, is left to the GC.
func TestDecompressBufferSizes(t *testing.T) {
	var rp recordPool
	for _, n := range []int{0, 1, 4 << 10, 4<<10 + 1, 100 << 10, 8 << 20} {
		src := s2.EncodeSnappy(nil, make([]byte, n))
		if b := rp.GetDecompressBytes(src, kgo.CodecSnappy); len(b) != 0 || cap(b) < n || cap(b) > max(2*n, minDecompressed) {
			t.Errorf("snappy batch of %d bytes: buffer of len %d cap %d", n, len(b), cap(b))
		}
	}
	// JSON compresses far beyond any fixed guess: zstd and gzip say the size.
	js := bytes.Repeat([]byte(`{"id":1,"customer":"acme","amount":"12.50"},`), 6000)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(js)
	w.Close()
	enc, _ := zstd.NewWriter(nil)
	for codec, src := range map[kgo.CompressionCodecType][]byte{kgo.CodecGzip: gz.Bytes(), kgo.CodecZstd: enc.EncodeAll(js, nil)} {
		if b := rp.GetDecompressBytes(src, codec); cap(b) < len(js) || cap(b) > 2*len(js)+bytes.MinRead {
			t.Errorf("codec %d, %d bytes from %d: buffer of cap %d", codec, len(js), len(src), cap(b))
		}
	}
	for _, codec := range []kgo.CompressionCodecType{kgo.CodecLz4, kgo.CodecZstd, kgo.CodecGzip} {
		if b := rp.GetDecompressBytes([]byte{1, 2, 3}, codec); b != nil {
			t.Errorf("codec %d, size unknown: a pooled buffer of cap %d, want nil (kgo allocates)", codec, cap(b))
		}
	}
	if b := rp.GetDecompressBytes(s2.EncodeSnappy(nil, make([]byte, 8<<20+1)), kgo.CodecSnappy); b != nil {
		t.Errorf("a batch above the largest class got a pooled buffer of cap %d", cap(b))
	}
	rp.PutDecompressBytes(make([]byte, 0, 5000)) // not a class size: dropped
	if b := rp.GetDecompressBytes(s2.EncodeSnappy(nil, make([]byte, 4097)), kgo.CodecSnappy); cap(b) != 8<<10 {
		t.Errorf("buffer of cap %d for a batch of 4097 bytes, want a fresh one of 8 KiB", cap(b))
	}
}
