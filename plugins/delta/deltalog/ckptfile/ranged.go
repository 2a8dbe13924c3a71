package ckptfile

import (
	"context"
	"errors"
	"io"
	"slices"
	"sort"

	"github.com/parquet-go/parquet-go"
)

// RangeGetter reads part of an object (deltalog.RangeReader).
type RangeGetter interface {
	GetRange(ctx context.Context, path string, offset, length int64) ([]byte, error)
}

// NewRangedReaderAt reads the object at path, size bytes, through rr.
func NewRangedReaderAt(ctx context.Context, rr RangeGetter, path string, size int64) *RangedReaderAt {
	return &RangedReaderAt{ctx: ctx, rr: rr, path: path, size: size}
}

// RangedReaderAt serves parquet-go's ReadAt calls from byte ranges fetched
// up front — one request per run of wanted column chunks — and falls back
// to a direct ranged GET for anything else (the footer).
type RangedReaderAt struct {
	ctx  context.Context
	rr   RangeGetter
	path string
	size int64
	segs []byteRange // sorted by off, non-overlapping
}

type byteRange struct {
	off  int64
	data []byte
}

// mergeGap is how far apart two wanted ranges may be and still be fetched
// in one request (cheaper than a second round trip).
const mergeGap = 1 << 20

// Prefetch fetches the chunks of the leaf columns leafIdx in every row
// group of pf, runs less than mergeGap apart in one request each.
func (r *RangedReaderAt) Prefetch(pf *parquet.File, leafIdx []int) error {
	type span struct{ start, end int64 }
	var spans []span
	for _, rg := range pf.Metadata().RowGroups {
		for _, i := range leafIdx {
			if i >= len(rg.Columns) {
				continue
			}
			md := rg.Columns[i].MetaData
			start := md.DataPageOffset
			if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
				start = md.DictionaryPageOffset
			}
			end := start + md.TotalCompressedSize
			if start < 0 || end > r.size || end <= start {
				continue // let ReadAt fetch on demand
			}
			spans = append(spans, span{start, end})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var merged []span
	for _, s := range spans {
		if n := len(merged); n > 0 && s.start <= merged[n-1].end+mergeGap {
			merged[n-1].end = max(merged[n-1].end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	for _, s := range merged {
		data, err := r.rr.GetRange(r.ctx, r.path, s.start, s.end-s.start)
		if err != nil {
			return err
		}
		r.segs = append(r.segs, byteRange{off: s.start, data: data})
	}
	return nil
}

// ReadAt implements io.ReaderAt from the prefetched ranges, or with a
// ranged GET for anything outside them.
func (r *RangedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := int64(len(p))
	short := false
	if off+want > r.size {
		want = r.size - off
		short = true
	}
	i, _ := slices.BinarySearchFunc(r.segs, off, func(s byteRange, off int64) int {
		switch {
		case s.off+int64(len(s.data)) <= off:
			return -1
		case s.off > off:
			return 1
		}
		return 0
	})
	if i < len(r.segs) {
		s := r.segs[i]
		if s.off <= off && off+want <= s.off+int64(len(s.data)) {
			n := copy(p, s.data[off-s.off:off-s.off+want])
			if short {
				return n, io.EOF
			}
			return n, nil
		}
	}
	data, err := r.rr.GetRange(r.ctx, r.path, off, want)
	if err != nil {
		return 0, err
	}
	n := copy(p, data)
	if short || n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
