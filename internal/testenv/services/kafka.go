package services

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// RequireKafka returns the services with the Apache Kafka broker's seed
// addresses, after checking the broker answers a metadata request; it
// fails the test with instructions otherwise. PostgreSQL and S3 are not
// checked.
func RequireKafka(t testing.TB) Services {
	t.Helper()
	s, err := lookup(kafkaKeys)
	if err != nil {
		t.Fatalf("%s", instructions(err, "the Kafka broker"))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaBrokers...))
	if err != nil {
		t.Fatalf("kafka client for %v: %v", s.KafkaBrokers, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if brokers, err := kadm.NewClient(cl).ListBrokers(ctx); err != nil || len(brokers) == 0 {
		err = fmt.Errorf("Kafka at %v does not answer a metadata request (brokers %v): %v", s.KafkaBrokers, brokers, err)
		t.Fatalf("%s", instructions(err, "the Kafka broker"))
	}
	return s
}
