package pipeline

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// PatternRefresh is how often a block's pattern is matched against the
// broker's topic list again: the spec's two seconds.
const PatternRefresh = 2 * time.Second

// records lends kgo the Record slices it decodes fetched batches into,
// and the buffers it decompresses record batches into. The consumer
// recycles a batch's records once it was delivered (land, inflight.go):
// nothing holds their bytes then (the plugin's frame is written, the dead
// letters acknowledged), and kgo zeroes a buffer and hands it back once
// every record decoded from it is recycled. So a steady stream allocates
// (and the GC scans) no Record per record, and no buffer per record batch.
var records = &recordPool{}

type recordPool struct {
	p sync.Pool
	// bufs[k] holds decompression buffers of capacity minDecompressed<<k.
	bufs [decompressClasses]sync.Pool
}

// Decompression buffers come in powers of two from 4 KiB to 8 MiB: a
// buffer serves any batch that fits it (kgo zeroes its whole capacity when
// it comes back, so at most twice the batch), and a larger batch gets a
// buffer of its own that the GC takes.
const (
	minDecompressed   = 4 << 10
	decompressClasses = 12
)

// decompressClass is the class of the smallest buffer holding n bytes, or
// -1 above the largest.
func decompressClass(n int) int {
	for k := range decompressClasses {
		if n <= minDecompressed<<k {
			return k
		}
	}
	return -1
}

// GetDecompressBytes returns an empty buffer for the decompressed batch
// when its codec says its size: a snappy block in its header (kgo's snappy
// decodes into it only when it fits: the Java producer's xerial framing
// reads as some size), a zstd frame in its header when the producer wrote
// it, a gzip stream in its trailer (plus the room bytes.Buffer.ReadFrom
// wants before it reads). Otherwise nil, and the codec allocates: a guess
// from the compressed size is far off for JSON, which compresses 20-60x,
// and a codec that outgrows its buffer allocates anew anyway (a reviewer
// measured gzip at 27x taking 3.5x the bytes per batch with a 4x guess).
func (rp *recordPool) GetDecompressBytes(compressed []byte, codec kgo.CompressionCodecType) []byte {
	n := decompressedLen(compressed, codec)
	if n < 0 {
		return nil
	}
	k := decompressClass(n)
	if k < 0 {
		return nil
	}
	if b, ok := rp.bufs[k].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, minDecompressed<<k)
}

// decompressedLen is the decompressed size compressed says it has, or -1.
func decompressedLen(compressed []byte, codec kgo.CompressionCodecType) int {
	switch codec {
	case kgo.CodecSnappy:
		if n, err := s2.DecodedLen(compressed); err == nil {
			return n
		}
	case kgo.CodecZstd:
		var h zstd.Header
		if h.Decode(compressed) == nil && h.HasFCS && h.FrameContentSize <= math.MaxInt32 {
			return int(h.FrameContentSize)
		}
	case kgo.CodecGzip:
		// ISIZE, the size mod 2^32, ends a one-member stream; a wrong
		// one (several members) only makes the buffer grow.
		if l := len(compressed); l >= 18 {
			return int(binary.LittleEndian.Uint32(compressed[l-4:])) + bytes.MinRead
		}
	}
	return -1
}

// PutDecompressBytes takes back a buffer kgo has zeroed: into the class it
// serves, unless its capacity is not one of the classes' (a codec grew it).
func (rp *recordPool) PutDecompressBytes(b []byte) {
	if k := decompressClass(cap(b)); k >= 0 && minDecompressed<<k == cap(b) {
		b = b[:0]
		rp.bufs[k].Put(&b)
	}
}

func (rp *recordPool) GetRecords(n int) []kgo.Record {
	if s, ok := rp.p.Get().(*[]kgo.Record); ok && cap(*s) >= n {
		return (*s)[:0]
	}
	return make([]kgo.Record, 0, n)
}

// PutRecords takes back a slice whose records kgo has zeroed.
func (rp *recordPool) PutRecords(s []kgo.Record) { rp.p.Put(&s) }

// clientOpts maps a [[topics]] block to kgo options: its group, its
// subscription, where a new group starts, and its properties.
func clientOpts(brokers []string, t definition.Topic) ([]kgo.Opt, error) {
	c := t.Client
	conn, err := connOpts(brokers, t)
	if err != nil {
		return nil, err
	}
	opts := append(conn,
		kgo.ConsumerGroup(t.ConsumerGroup),
		kgo.DisableAutoCommit(),
		// Rebalance callbacks run between our polls, never while a batch
		// is being delivered and committed.
		kgo.BlockRebalanceOnPoll(),
		kgo.WithPools(records),
	)
	if t.Pattern != "" {
		// With ConsumeRegex every topic is a pattern: named topics are
		// matched exactly, the union the spec asks for.
		topics := []string{t.Pattern}
		for _, name := range t.Topics {
			topics = append(topics, "^"+regexp.QuoteMeta(name)+"$")
		}
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(topics...),
			kgo.MetadataMaxAge(PatternRefresh), kgo.MetadataMinAge(PatternRefresh/2))
		if ex := t.DeadLetterExcludes(); len(ex) > 0 {
			opts = append(opts, kgo.ConsumeExcludeTopics(ex...))
		}
	} else {
		opts = append(opts, kgo.ConsumeTopics(t.Topics...))
	}
	if t.OffsetReset == definition.Latest {
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	} else {
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	if c.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(c.SessionTimeout))
	}
	if c.Heartbeat > 0 {
		opts = append(opts, kgo.HeartbeatInterval(c.Heartbeat))
	}
	if c.FetchMaxBytes > 0 {
		opts = append(opts, kgo.FetchMaxBytes(c.FetchMaxBytes))
	}
	if c.PartitionBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(c.PartitionBytes))
	}
	minBytes, maxWait, _ := fetchShape(t)
	if minBytes > 0 {
		opts = append(opts, kgo.FetchMinBytes(minBytes))
	}
	if maxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(maxWait))
	}
	return opts, nil
}

// connOpts are the options of every client of a block, consumer or
// dead-letter producer: where the brokers are and how to reach them.
func connOpts(brokers []string, t definition.Topic) ([]kgo.Opt, error) {
	c := t.Client
	if len(c.Brokers) > 0 {
		brokers = c.Brokers
	}
	if len(brokers) == 0 {
		return nil, fmt.Errorf("no brokers: pass --brokers or set bootstrap.servers in properties")
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	if c.TLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("ssl.ca.location: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("ssl.ca.location %s: no PEM certificate", c.CAFile)
			}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	user, pass := c.SASLUser, string(c.SASLPassword)
	switch c.SASLMechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	}
	return opts, nil
}
