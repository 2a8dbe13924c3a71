package services

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv"
)

// Environment variables that name the services. buildscripts/services.sh
// writes the same keys to .services.env.
const (
	EnvPGDSN       = "PICOMQ_TEST_PG_DSN"
	EnvS3Endpoint  = "PICOMQ_TEST_S3_ENDPOINT"
	EnvS3AccessKey = "PICOMQ_TEST_S3_ACCESS_KEY"
	EnvS3SecretKey = "PICOMQ_TEST_S3_SECRET_KEY"
	EnvS3Region    = "PICOMQ_TEST_S3_REGION"

	EnvAzureEndpoint = "PICOMQ_TEST_AZURE_ENDPOINT" // blob service URL, path-style for Azurite
	EnvAzureAccount  = "PICOMQ_TEST_AZURE_ACCOUNT"
	EnvAzureKey      = "PICOMQ_TEST_AZURE_KEY"
	EnvGCSEndpoint   = "PICOMQ_TEST_GCS_ENDPOINT" // fake-gcs-server, plain http

	EnvKafkaBrokers = "PICOMQ_KAFKA_BROKERS" // comma-separated host:port of the Apache Kafka broker

	EnvSchemaRegistryURL = "PICOMQ_SCHEMA_REGISTRY_URL" // base URL of the registry's Confluent API
)

// EnvFile is the file, at the repository root, that services.sh writes.
const EnvFile = ".services.env"

var (
	// envKeys are the services every integration test may use: Lookup and
	// Require insist on them.
	envKeys = []string{EnvPGDSN, EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey, EnvS3Region}
	// azureKeys and gcsKeys are checked by RequireAzure and RequireGCS only,
	// so a .services.env written before those services existed keeps
	// working for everything else.
	azureKeys    = []string{EnvAzureEndpoint, EnvAzureAccount, EnvAzureKey}
	gcsKeys      = []string{EnvGCSEndpoint}
	kafkaKeys    = []string{EnvKafkaBrokers}
	registryKeys = []string{EnvSchemaRegistryURL}
	allKeys      = slices.Concat(envKeys, azureKeys, gcsKeys, kafkaKeys, registryKeys)
)

// Services describes the running PostgreSQL, S3, Azure and GCS endpoints.
type Services struct {
	// PGDSN is a libpq URL for an account that may CREATE DATABASE.
	PGDSN string
	// S3Endpoint is the base URL of the S3 API, e.g. http://127.0.0.1:9000.
	S3Endpoint  string
	S3AccessKey string
	S3SecretKey string
	S3Region    string

	// AzureEndpoint is the blob service URL with the account in the path
	// (Azurite's path style), e.g. http://127.0.0.1:10000/devstoreaccount1;
	// AzureAccount and AzureKey are its shared-key credentials. Set when
	// RequireAzure passed.
	AzureEndpoint string
	AzureAccount  string
	AzureKey      string
	// GCSEndpoint is fake-gcs-server's base URL, e.g. http://127.0.0.1:4443.
	// Set when RequireGCS passed.
	GCSEndpoint string
	// KafkaBrokers are the seed brokers of the real Apache Kafka broker
	// (single-node KRaft). Set when RequireKafka passed.
	KafkaBrokers []string
	// SchemaRegistryURL is the base URL of the Schema Registry's Confluent
	// API (Apicurio Registry's /apis/ccompat/v6). Set when
	// RequireSchemaRegistry passed.
	SchemaRegistryURL string
}

// Lookup reads the service description from the environment, falling back to
// the .services.env file at the repository root (found by walking up from the
// working directory to go.mod) for keys the environment leaves unset.
// It returns an error naming every missing PostgreSQL or S3 key; the Azure
// and GCS fields are filled when their keys are there.
func Lookup() (Services, error) { return lookup(envKeys) }

// lookup reads every key and fails when one of required is missing.
func lookup(required []string) (Services, error) {
	vals := map[string]string{}
	for _, k := range allKeys {
		if v := os.Getenv(k); v != "" {
			vals[k] = v
		}
	}
	var fileErr error
	if len(vals) < len(allKeys) {
		var fromFile map[string]string
		fromFile, fileErr = readEnvFile()
		for k, v := range fromFile {
			if _, ok := vals[k]; !ok && v != "" {
				vals[k] = v
			}
		}
	}
	var missing []string
	for _, k := range required {
		if vals[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("test services are not configured: %s unset", strings.Join(missing, ", "))
		if fileErr != nil {
			msg += " (" + fileErr.Error() + ")"
		}
		return Services{}, errors.New(msg)
	}
	return Services{
		PGDSN:       vals[EnvPGDSN],
		S3Endpoint:  vals[EnvS3Endpoint],
		S3AccessKey: vals[EnvS3AccessKey],
		S3SecretKey: vals[EnvS3SecretKey],
		S3Region:    vals[EnvS3Region],

		AzureEndpoint: vals[EnvAzureEndpoint],
		AzureAccount:  vals[EnvAzureAccount],
		AzureKey:      vals[EnvAzureKey],
		GCSEndpoint:   vals[EnvGCSEndpoint],
		KafkaBrokers:  splitList(vals[EnvKafkaBrokers]),

		SchemaRegistryURL: vals[EnvSchemaRegistryURL],
	}, nil
}

// Require returns the running services or fails the test with instructions.
// It never skips: a test that needs PostgreSQL or S3 and cannot reach them is
// a failure, in CI and on a laptop alike.
func Require(t testing.TB) Services {
	t.Helper()
	s, err := Lookup()
	if err != nil {
		t.Fatalf("%s", instructions(err, "PostgreSQL and MinIO"))
	}
	return s
}

// RequireAzure returns the services with Azurite's endpoint and credentials,
// or fails the test with instructions. PostgreSQL and S3 are not checked.
func RequireAzure(t testing.TB) Services {
	t.Helper()
	s, err := lookup(azureKeys)
	if err != nil {
		t.Fatalf("%s", instructions(err, "Azurite"))
	}
	return s
}

// RequireGCS returns the services with fake-gcs-server's endpoint, or fails
// the test with instructions. PostgreSQL and S3 are not checked.
func RequireGCS(t testing.TB) Services {
	t.Helper()
	s, err := lookup(gcsKeys)
	if err != nil {
		t.Fatalf("%s", instructions(err, "fake-gcs-server"))
	}
	return s
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func instructions(err error, what string) string {
	return fmt.Sprintf("%v\n\nStart %s (services.sh starts every test service) first:\n\n    make services\n\nor\n\n    buildscripts/services.sh start\n\n"+
		"which writes %s at the repository root (or export the %s variables yourself).", err, what, EnvFile, "PICOMQ_TEST_*")
}

func readEnvFile() (map[string]string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	return parseEnvFile(filepath.Join(root, EnvFile))
}

// parseEnvFile reads KEY=VALUE lines (optionally `export`ed, optionally
// quoted), as services.sh writes them.
func parseEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s does not exist", path)
		}
		return nil, err
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		vals[strings.TrimSpace(k)] = v
	}
	return vals, sc.Err()
}
