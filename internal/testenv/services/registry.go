package services

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// RequireSchemaRegistry returns the services with the Schema Registry's
// Confluent API base URL, after checking it lists subjects; it fails the
// test with instructions otherwise. PostgreSQL and S3 are not checked.
func RequireSchemaRegistry(t testing.TB) Services {
	t.Helper()
	s, err := lookup(registryKeys)
	if err != nil {
		t.Fatalf("%s", instructions(err, "the Schema Registry"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.SchemaRegistryURL+"/subjects", nil)
	if err != nil {
		t.Fatalf("Schema Registry URL %q: %v", s.SchemaRegistryURL, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
	}
	if err != nil {
		err = fmt.Errorf("the Schema Registry at %s does not list subjects: %v", s.SchemaRegistryURL, err)
		t.Fatalf("%s", instructions(err, "the Schema Registry"))
	}
	return s
}
