package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// wholeFile is the largest data file read with one GET; larger ones are
// read column chunk by column chunk (only the pico_* columns wanted).
const wholeFile = 8 << 20

// Delta is a Delta sink's tables, read for the audit: the txn version of
// each partition's appId, the rejections commitInfo recorded, and, when
// the tables have the columns, the pico_topic, pico_partition and
// pico_offset of every row of the current snapshot.
type Delta struct {
	Key string // the sink key (the appIds name it)
	Cfg *delta.Audit
}

// Scan reads the table of each partition's topic.
func (d *Delta) Scan(ctx context.Context, tps []audit.TP) (map[audit.TP]*audit.Written, []string, error) {
	byTable := map[string][]audit.TP{}
	var uris []string
	for _, tp := range tps {
		uri, err := d.Cfg.Table(tp.Topic)
		if err != nil {
			return nil, nil, err
		}
		if byTable[uri] == nil {
			uris = append(uris, uri)
		}
		byTable[uri] = append(byTable[uri], tp)
	}
	out := map[audit.TP]*audit.Written{}
	var notes []string
	for _, uri := range uris {
		n, err := d.scanTable(ctx, uri, byTable[uri], out)
		if err != nil {
			return nil, nil, fmt.Errorf("Delta table %s: %w", uri, err)
		}
		notes = append(notes, n...)
	}
	return out, notes, nil
}

func (d *Delta) scanTable(ctx context.Context, uri string, tps []audit.TP, out map[audit.TP]*audit.Written) ([]string, error) {
	store, err := d.Cfg.Open(ctx, uri)
	if err != nil {
		return nil, err
	}
	st, err := deltalog.LoadState(ctx, store, nil)
	if errors.Is(err, deltalog.ErrNoTable) {
		for _, tp := range tps {
			out[tp] = &audit.Written{Table: uri, Proof: audit.ProofRows, Txn: -1}
		}
		return []string{fmt.Sprintf("Delta table %s does not exist", uri)}, nil
	}
	if err != nil {
		return nil, err
	}
	var notes []string
	note := func(format string, args ...any) {
		notes = append(notes, fmt.Sprintf("Delta table %s (version %d): ", uri, st.Version)+fmt.Sprintf(format, args...))
	}
	apps := map[string]audit.TP{}
	for _, tp := range tps {
		w := &audit.Written{Table: uri, Proof: audit.ProofRows, Txn: -1}
		app := delta.AppID(d.Key, tp.Topic, uint32(tp.Partition))
		if v, ok := st.TxnVersion(app); ok {
			w.Txn = v
		}
		apps[app] = tp
		out[tp] = w
	}
	cols, why := d.columns(st, tps)
	if why != "" {
		// Only a txn claim needs the rejections (the offsets it does not
		// cover); under the rows proof the rows decide and reading every
		// commit in the log would be a GET each for an informational
		// count.
		if err := d.rejections(ctx, store, st.Version, apps, out, note); err != nil {
			return nil, err
		}
		for _, tp := range tps {
			out[tp].Proof = audit.ProofTxn
		}
		note("%s: only the txn versions are checked (every offset up to the version counts as written, less the rejected ones); rows, and duplicates, are not", why)
		if !d.Cfg.ExactlyOnce() {
			note("exactly_once = false: the sink writes no txn action, so nothing of this table can be checked")
		}
		return notes, nil
	}
	var stray, nulls int64
	var scanErr error
	for f := range st.Files() {
		if scanErr = ctx.Err(); scanErr != nil {
			break
		}
		var s, n int64
		s, n, scanErr = readFile(ctx, store, f, cols, tps, out)
		if scanErr != nil {
			scanErr = fmt.Errorf("data file %s: %w", f.Path, scanErr)
			break
		}
		stray, nulls = stray+s, nulls+n
	}
	if scanErr != nil {
		return nil, scanErr
	}
	if nulls > 0 {
		note("%d row(s) without pico_offset or pico_partition (written before metadata_columns, or by another writer): not counted", nulls)
	}
	if stray > 0 {
		note("%d row(s) of topic-partitions this sink does not consume now: not counted", stray)
	}
	return notes, nil
}

// rejections collects the offsets each commit still in the log recorded
// as rejected for one of apps, newest first, until a commit is gone
// (cleaned up behind a checkpoint: older rejections cannot be known).
func (d *Delta) rejections(ctx context.Context, store deltalog.Store, version int64, apps map[string]audit.TP, out map[audit.TP]*audit.Written, note func(string, ...any)) error {
	for v := version; v >= 0; v-- {
		c, err := deltalog.ReadCommit(ctx, store, v)
		if errors.Is(err, deltalog.ErrNotFound) {
			note("commits before version %d are cleaned up from the log: the offsets they rejected are not known", v+1)
			return nil
		}
		if err != nil {
			return err
		}
		rej, err := delta.Rejections(c)
		if err != nil {
			return err
		}
		for app, offs := range rej {
			tp, ok := apps[app]
			if !ok {
				continue
			}
			for _, o := range offs {
				out[tp].Rejected.Add(int64(o), int64(o)+1, nil)
			}
		}
	}
	return nil
}

// picoColumns is where a table keeps the record coordinates: each a
// column of the data files, or a partition column (the value in each add),
// or absent (topic only, when the table holds one topic).
type picoColumns struct {
	offset, partition, topic string
	partitionIsPart          bool // pico_partition is a partition column
	topicIsPart              bool
	hasTopic                 bool
	oneTopic                 string // the table's only topic when it has no pico_topic
}

// columns decides how the table's rows name their record, or says why they
// cannot.
func (d *Delta) columns(st *deltalog.State, tps []audit.TP) (picoColumns, string) {
	c := picoColumns{offset: metadata.Offset, partition: metadata.Partition, topic: metadata.Topic}
	if !d.Cfg.MetadataColumns() {
		return c, "metadata_columns is false"
	}
	if d.Cfg.Upsert() {
		// A superseded or deleted change leaves no row: rows would show
		// every change but each key's last as missing.
		return c, `write_mode = "upsert" keeps only each key's last change`
	}
	schema, err := deltalog.ParseSchema(st.Metadata.SchemaString)
	if err != nil {
		return c, fmt.Sprintf("its schema does not parse (%v)", err)
	}
	if m := st.Metadata.Configuration["delta.columnMapping.mode"]; m != "" && m != "none" {
		return c, "it uses column mapping"
	}
	for f := range st.Files() {
		if len(f.DeletionVector) > 0 && string(f.DeletionVector) != "null" {
			return c, "it has deletion vectors, which the audit does not read"
		}
	}
	isPart := func(name string) bool { return slices.Contains(st.Metadata.PartitionColumns, name) }
	if f := schema.Field(metadata.Offset); f == nil {
		return c, "it has no pico_offset column"
	} else if isPart(metadata.Offset) {
		return c, "pico_offset is a partition column"
	}
	if schema.Field(metadata.Partition) == nil {
		return c, "it has no pico_partition column"
	}
	c.partitionIsPart = isPart(metadata.Partition)
	c.hasTopic = schema.Field(metadata.Topic) != nil
	c.topicIsPart = c.hasTopic && isPart(metadata.Topic)
	if !c.hasTopic {
		topics := map[string]bool{}
		for _, tp := range tps {
			topics[tp.Topic] = true
			c.oneTopic = tp.Topic
		}
		if len(topics) > 1 {
			return c, "it has no pico_topic column and holds several topics"
		}
	}
	return c, ""
}

// readFile counts the rows of one data file into out, reading only the
// pico_* columns, page by page.
func readFile(ctx context.Context, store delta.ReadOnlyStore, f *deltalog.Add, c picoColumns, tps []audit.TP, out map[audit.TP]*audit.Written) (stray, nulls int64, err error) {
	path, err := deltalog.FilePath(f.Path)
	if err != nil {
		return 0, 0, err
	}
	var r io.ReaderAt
	size := f.Size
	var ranged *ckptfile.RangedReaderAt
	if size > wholeFile {
		ranged = ckptfile.NewRangedReaderAt(ctx, store, path, size)
		r = ranged
	} else {
		data, err := store.Get(ctx, path)
		if err != nil {
			return 0, 0, err
		}
		size = int64(len(data))
		r = bytes.NewReader(data)
	}
	pf, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return 0, 0, err
	}
	// Partition values, when the coordinates are partition columns.
	var fixedPart *int64
	var fixedTopic *string
	if c.partitionIsPart {
		v := f.PartitionValues[c.partition]
		if v == nil {
			return 0, pf.NumRows(), nil
		}
		p, err := strconv.ParseInt(*v, 10, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("partition value %s=%q: %w", c.partition, *v, err)
		}
		fixedPart = &p
	}
	if c.topicIsPart {
		fixedTopic = f.PartitionValues[c.topic]
		if fixedTopic == nil {
			return 0, pf.NumRows(), nil
		}
	} else if !c.hasTopic {
		fixedTopic = &c.oneTopic
	}
	leaf := func(name string) (int, error) {
		col := pf.Root().Column(name)
		if col == nil || !col.Leaf() {
			return -1, fmt.Errorf("no %s column", name)
		}
		return col.Index(), nil
	}
	want := []string{c.offset}
	if fixedPart == nil {
		want = append(want, c.partition)
	}
	if fixedTopic == nil {
		want = append(want, c.topic)
	}
	idx := make([]int, len(want))
	for i, name := range want {
		if pf.Root().Column(name) == nil {
			// A file written before metadata_columns was turned on (the
			// table's schema gained the column later): its rows carry
			// no offsets.
			return 0, pf.NumRows(), nil
		}
		if idx[i], err = leaf(name); err != nil {
			return 0, 0, err
		}
	}
	if ranged != nil {
		if err := ranged.Prefetch(pf, idx); err != nil {
			return 0, 0, err
		}
	}
	known := map[audit.TP]*audit.Written{}
	for _, tp := range tps {
		known[tp] = out[tp]
	}
	for _, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		cur := make([]*column, len(idx))
		for i, ix := range idx {
			cur[i] = newColumn(chunks[ix].Pages())
		}
		err := func() error {
			defer func() {
				for _, c := range cur {
					c.pages.Close()
				}
			}()
			vals := make([]parquet.Value, len(cur))
			for range rg.NumRows() {
				for i, c := range cur {
					v, err := c.next()
					if err != nil {
						return fmt.Errorf("column %s: %w", want[i], err)
					}
					vals[i] = v
				}
				if vals[0].IsNull() {
					nulls++
					continue
				}
				tp := audit.TP{}
				k := 1
				if fixedPart != nil {
					tp.Partition = int32(*fixedPart)
				} else {
					if vals[k].IsNull() {
						nulls++
						continue
					}
					tp.Partition = int32(intOf(vals[k]))
					k++
				}
				if fixedTopic != nil {
					tp.Topic = *fixedTopic
				} else {
					if vals[k].IsNull() {
						nulls++
						continue
					}
					tp.Topic = string(vals[k].ByteArray())
				}
				w, ok := known[tp]
				if !ok {
					stray++
					continue
				}
				o := intOf(vals[0])
				w.Rows.Add(o, o+1)
			}
			return nil
		}()
		if err != nil {
			return 0, 0, err
		}
	}
	return stray, nulls, nil
}

func intOf(v parquet.Value) int64 {
	if v.Kind() == parquet.Int32 {
		return int64(v.Int32())
	}
	return v.Int64()
}

// column reads one column chunk value by value, a page at a time.
type column struct {
	pages parquet.Pages
	page  parquet.ValueReader
	buf   []parquet.Value
	n, at int
}

func newColumn(p parquet.Pages) *column { return &column{pages: p, buf: make([]parquet.Value, 1024)} }

func (c *column) next() (parquet.Value, error) {
	for c.at >= c.n {
		if c.page == nil {
			p, err := c.pages.ReadPage()
			if err != nil {
				if err == io.EOF {
					return parquet.Value{}, io.ErrUnexpectedEOF
				}
				return parquet.Value{}, err
			}
			c.page = p.Values()
		}
		n, err := c.page.ReadValues(c.buf)
		c.n, c.at = n, 0
		if err == io.EOF {
			c.page = nil
		} else if err != nil {
			return parquet.Value{}, err
		}
	}
	v := c.buf[c.at]
	c.at++
	return v, nil
}
