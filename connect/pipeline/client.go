package pipeline

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// PatternRefresh is how often a block's pattern is matched against the
// broker's topic list again: the spec's two seconds.
const PatternRefresh = 2 * time.Second

// records lends kgo the Record slices it decodes fetched batches into.
// The consumer recycles a batch's records once its offset is committed,
// so a steady stream allocates (and the GC scans) no Record per record.
var records = &recordPool{}

type recordPool struct{ p sync.Pool }

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
	minBytes, maxWait := fetchShape(t)
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
