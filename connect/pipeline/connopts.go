package pipeline

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// ConnOpts are the options that reach a block's brokers (seed brokers,
// client id, TLS, SASL), as its consumer and dead-letter producer use
// them, for other clients of the same cluster (picomq-connect audit).
func ConnOpts(brokers []string, t definition.Topic) ([]kgo.Opt, error) { return connOpts(brokers, t) }
