package deltatest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// CreateOrders makes a partitioned table with delta-rs: the layout of the
// spec's examples, a timestamp needing coercion and a nested struct.
const CreateOrders = `
schema = pa.schema([
    ("id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64()), ("paid", pa.bool_()),
    ("created_at", pa.timestamp("us", tz="UTC")), ("attrs", pa.string()),
    ("address", pa.struct([("city", pa.string()), ("zip", pa.int32())])),
    ("tags", pa.list_(pa.string())), ("region", pa.string()),
])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), partition_by=["region"], storage_options=opts)
`

// OpenErr opens an instance that must fail and returns the error.
func OpenErr(t *testing.T, rt sinkdriver.Runtime, key string, cfg map[string]any) error {
	t.Helper()
	inst, err := rt.Open(sinkdriver.Definition{Key: key, Name: key, Config: cfg})
	if err == nil {
		_ = inst.Close()
		t.Fatalf("open %s succeeded, want an error", key)
	}
	return err
}

// WantStatus checks err is a status from the plugin with code and a message
// containing each of contains.
func WantStatus(t *testing.T, err error, code hostclient.Status, contains ...string) {
	t.Helper()
	var se *hostclient.StatusError
	if !errors.As(err, &se) || se.Code != code {
		t.Fatalf("got %v, want status %v", err, code)
	}
	for _, c := range contains {
		if !strings.Contains(se.Message, c) {
			t.Fatalf("message %q does not contain %q", se.Message, c)
		}
	}
}

// NoSecret fails when one of secrets shows in the instance's log lines or
// metrics.
func NoSecret(t *testing.T, inst sinkdriver.Instance, secrets ...string) {
	t.Helper()
	m, _ := inst.Metrics()
	for _, secret := range secrets {
		for _, l := range inst.Logs() {
			if strings.Contains(l, secret) {
				t.Fatalf("secret in logs: %s", l)
			}
		}
		if strings.Contains(m, secret) {
			t.Fatalf("secret in metrics: %s", m)
		}
	}
}

// noSecretIn fails when one of secrets shows in err.
func noSecretIn(t *testing.T, err error, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("secret leaked: %v", err)
		}
	}
}

// PartitionDirs returns the partition directory of each data file named.
func PartitionDirs(names []string) string {
	var dirs []string
	for _, k := range names {
		if strings.HasSuffix(k, ".snappy.parquet") {
			dirs = append(dirs, k[:strings.Index(k, "/")])
		}
	}
	return fmt.Sprint(dirs)
}

// QuickStart is the spec's quick start: templated URIs, partitioned tables,
// replays that add nothing, the store's secret given only through the
// environment override and never shown. Data files are where the spec says.
func QuickStart(t *testing.T, d sinkdriver.Driver, s *Store) {
	for _, region := range []string{"eu", "us"} {
		s.Create(CreateOrders, "orders/"+region)
	}
	cfg := s.Config(s.URI("orders/{topic_segment[-1]}"))
	if s.SecretKey != "" {
		secret := cfg[s.SecretKey].(string)
		delete(cfg, s.SecretKey)
		d = sinkdriver.WithEnv(d, "PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_"+strings.ToUpper(s.SecretKey)+"="+secret)
	}
	inst := Open(t, d.Start(t, s.Secrets...), "orders_delta", cfg)
	for n := range 3 {
		consume(t, inst, JSONBatch("orders.eu", uint64(n*2),
			fmt.Sprintf(`{"id":%d,"customer":"c","created_at":"2026-09-03T21:15:04Z","region":"eu"}`, n*2),
			fmt.Sprintf(`{"id":%d,"customer":"c","created_at":"2026-09-03T21:15:04Z","region":"north"}`, n*2+1)))
	}
	consume(t, inst, JSONBatch("orders.us", 0, `{"id":100,"region":"us"}`))
	// Replays change nothing.
	consume(t, inst, JSONBatch("orders.eu", 4, `{"id":4,"region":"eu"}`, `{"id":5,"region":"north"}`))

	eu := s.ReadRows(s.URI("orders/eu"), "id")
	if len(eu) != 6 || eu[5]["id"] != 5.0 || eu[5]["region"] != "north" || eu[0]["created_at"] != "2026-09-03T21:15:04+00:00" {
		t.Fatalf("eu rows %v", eu)
	}
	if us := s.ReadRows(s.URI("orders/us"), "id"); len(us) != 1 {
		t.Fatalf("us rows %v", us)
	}
	if n := len(s.History(s.URI("orders/eu"))); n != 4 {
		t.Fatalf("%d versions", n)
	}
	if got := PartitionDirs(s.Objects("orders/eu")); got != "[region=eu region=eu region=eu region=north region=north region=north]" {
		t.Fatalf("data files %v", got)
	}
	NoSecret(t, inst, s.Secrets...)
}

// ConcurrentWritersLoseNothing: sinks with different keys (so different
// application transactions) write one table at the same time, from several
// threads: every commit lands, one version and one data file each, none is
// lost to a race.
func ConcurrentWritersLoseNothing(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	// More, smaller commits where a commit is cheap.
	writers, batches, per := 3, 8, 5
	if s.Backend == File {
		batches, per = 15, 4
	}
	rt := d.Start(t, s.Secrets...)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	var want []string
	for w := range writers {
		inst := Open(t, rt, fmt.Sprintf("w%d", w), s.Config(uri))
		want = append(want, Span(w*1000, w*1000+batches*per-1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range batches {
				if err := inst.Consume(Events(fmt.Sprintf("t%d", w), w*1000+n*per, per)); err != nil {
					errs <- fmt.Errorf("writer %d batch %d: %w", w, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.WantIDs(uri, strings.Join(want, ","))
	if n := len(s.History(uri)); n != 1+writers*batches {
		t.Fatalf("%d versions, want %d", n, 1+writers*batches)
	}
	parquet := 0
	for _, name := range s.Objects("events") {
		if !strings.Contains(name, "/") && strings.HasSuffix(name, ".parquet") {
			parquet++
		}
	}
	if parquet != writers*batches {
		t.Fatalf("%d data files, want %d (an aborted attempt left garbage or a commit lost its file)", parquet, writers*batches)
	}
}

// MissingTableIsBadConfig: a table_uri where no table is: the store
// answered no, a configuration error at open.
func MissingTableIsBadConfig(t *testing.T, d sinkdriver.Driver, s *Store) {
	err := OpenErr(t, d.Start(t, s.Secrets...), "m", s.Config(s.URI("none")))
	WantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table "+s.URI("none"))
}

// MissingBucketIsBadConfig: a bucket (container) that does not exist: the
// store answered no, as for a missing table.
func MissingBucketIsBadConfig(t *testing.T, d sinkdriver.Driver, s *Store) {
	rt := d.Start(t, s.Secrets...)
	switch s.Backend {
	case Azure:
		err := OpenErr(t, rt, "m", s.Config("az://picomq-no-such-container/events", "azure_container_name", "picomq-no-such-container"))
		WantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table az://picomq-no-such-container/events", `container "picomq-no-such-container" does not exist`)
	default:
		uri := strings.TrimSuffix(s.Root(), s.Bucket) + "picomq-no-such-bucket-0/events"
		err := OpenErr(t, rt, "m", s.Config(uri))
		WantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table "+uri, `bucket "picomq-no-such-bucket-0" does not exist`)
	}
}

// S3RefusedKeysAreBadConfig: keys the store refuses as an authentication
// failure are configuration, and the refused secret is not quoted. (A key
// lacking a permission, AccessDenied, stays RETRY: see e2e/delta's
// TestS3ErrorShowsEndpointScheme.)
func S3RefusedKeysAreBadConfig(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	rt := d.Start(t, s.Secrets...)
	err := OpenErr(t, rt, "m", s.Config(uri, "aws_s3_secret_key", "wrong-secret-value"))
	WantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table", "SignatureDoesNotMatch", "the store refused the configured key")
	noSecretIn(t, err, "wrong-secret-value")
	err = OpenErr(t, rt, "m", s.Config(uri, "aws_s3_access_key", "picomq-unknown-key"))
	WantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table", "InvalidAccessKeyId", "the store refused the configured key")
}

// AzureCredentialsAndContainer: a wrong account key (Azurite answers
// AuthorizationFailure, not the service's AuthenticationFailed) is RETRY
// and not quoted; the URI's container must be azure_container_name, at
// open for a static URI and on the batch for a templated one; both
// credentials at once is the spec's message.
func AzureCredentialsAndContainer(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	rt := d.Start(t, s.Secrets...)
	const wrongKey = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ=="
	err := OpenErr(t, rt, "m", s.Config(uri, "azure_storage_account_key", wrongKey))
	WantStatus(t, err, hostclient.StatusRetry, "Failed to load Delta table", "HTTP 403")
	noSecretIn(t, err, append([]string{wrongKey}, s.Secrets...)...)

	err = OpenErr(t, rt, "m", s.Config("az://other/events"))
	WantStatus(t, err, hostclient.StatusBadConfig, "Invalid table URI", `container "other" differs from azure_container_name "`+s.Bucket+`"`)
	inst := Open(t, rt, "m", s.Config("az://{topic}/events"))
	WantStatus(t, inst.Consume(Events("other", 0, 1)), hostclient.StatusFatal, "Invalid table URI", `container "other" differs`)
	consume(t, inst, Events(s.Bucket, 0, 1))
	s.WantIDs(uri, "0")

	err = OpenErr(t, rt, "m", s.Config(uri, "azure_storage_sas_token", "sv=1&sig=x"))
	WantStatus(t, err, hostclient.StatusBadConfig, "Azure backend requires exactly one of 'azure_storage_account_key' or 'azure_storage_sas_token'")
}

// AzureSASTokenAndABFSSURI: a SAS token instead of the account key, and an
// abfss URI naming the same container; neither the token nor its signature
// is shown.
func AzureSASTokenAndABFSSURI(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	sas := s.svc.AzureContainerSAS(t, s.Bucket)
	sig := strings.Split(strings.SplitAfter(sas, "sig=")[1], "&")[0]
	inst := Open(t, d.Start(t, append([]string{sas, sig}, s.Secrets...)...), "ev", s.Config(fmt.Sprintf("abfss://%s@%s.dfs.core.windows.net/events", s.Bucket, s.svc.AzureAccount),
		"azure_storage_account_key", nil, "azure_storage_sas_token", "?"+sas))
	consume(t, inst, Events("t", 0, 3))
	consume(t, inst, Events("t", 0, 3))
	consume(t, inst, Events("t", 3, 2))
	s.WantIDs(uri, "0,1,2,3,4")
	NoSecret(t, inst, sas, sig)
}

// GCSKeyIsChecked: a key that is not a service account key, or whose
// private key does not parse where it is needed, is refused at open without
// quoting it; likewise an Azure account key that is not base64; no key is
// the spec's message.
func GCSKeyIsChecked(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	rt := d.Start(t, s.Secrets...)
	marker := s.Secrets[0]
	for _, bad := range []string{`{"type":"authorized_user","refresh_token":"` + marker + `"}`, "not json " + marker} {
		err := OpenErr(t, rt, "m", s.Config(uri, "gcs_service_account_key", bad))
		WantStatus(t, err, hostclient.StatusBadConfig, "Invalid storage configuration: gcs_service_account_key is not")
		noSecretIn(t, err, marker)
	}
	// Against an authenticated (https) endpoint the private key must parse:
	// the emulator key's does not.
	key := s.config["gcs_service_account_key"].(string)
	err := OpenErr(t, rt, "m", s.Config(uri, "gcs_endpoint_url", "https://127.0.0.1:1"))
	WantStatus(t, err, hostclient.StatusBadConfig, "Invalid storage configuration: gcs_service_account_key: private_key is not")
	noSecretIn(t, err, marker, key)
	err = OpenErr(t, rt, "m", map[string]any{"table_uri": "az://c/t", "storage_backend_type": "azure", "azure_storage_account_name": "a",
		"azure_container_name": "c", "azure_storage_account_key": "not-base64 " + marker})
	WantStatus(t, err, hostclient.StatusBadConfig, "Invalid storage configuration: azure_storage_account_key is not a base64 account key")
	noSecretIn(t, err, marker)
	err = OpenErr(t, rt, "m", map[string]any{"table_uri": uri, "storage_backend_type": "gcs"})
	WantStatus(t, err, hostclient.StatusBadConfig, "Invalid storage configuration: GCS backend requires 'gcs_service_account_key'")
}

// CreateTableOnFirstBatch: the first batch creates the table in one commit
// (version 0: protocol, metaData and the batch), with the lowest protocol
// and the partition columns asked for; replays and later batches append as
// usual.
func CreateTableOnFirstBatch(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.URI("events")
	inst := Open(t, d.Start(t, s.Secrets...), "ev", s.Config(uri, "create_table", true, "table_schema", EventsSchema, "partition_by", "region"))
	consume(t, inst, RegionEvents("events", 0, 6))
	f := s.Facts(uri)
	if f.Reader != 1 || f.Writer != 2 || len(f.WriterFeatures) != 0 || strings.Join(f.Partitions, ",") != "region" ||
		fmt.Sprint(f.Versions) != "[0]" || f.Operations[0] != "CREATE TABLE AS SELECT" {
		t.Fatalf("created table: %+v", f)
	}
	s.WantIDs(uri, Span(0, 5))
	consume(t, inst, RegionEvents("events", 3, 6)) // a replay of 3..5, then 6..8
	s.WantIDs(uri, Span(0, 8))
	if f := s.Facts(uri); fmt.Sprint(f.Versions) != "[0 1]" {
		t.Fatalf("versions %v", f.Versions)
	}
	rows := s.ReadRows(uri, "id")
	if rows[7]["region"] != "r1" || rows[7]["body"] != "event 7" {
		t.Fatalf("row 7: %v", rows[7])
	}
}

// escapingTopics are topics that, substituted into <base>/{topic}, name a
// table beside base/ once the URL is decoded and its dot segments resolved.
var escapingTopics = []string{"../other", "%2e%2e/other", "%2E./other", "ok/../../other"}

// TopicCannotLeaveTemplateDirectory: a topic cannot move its table out of
// the template's directory: the batch is refused as FATAL naming the topic,
// and nothing is written anywhere, least of all into the table beside base/
// that the topic aims at.
func TopicCannotLeaveTemplateDirectory(t *testing.T, d sinkdriver.Driver, s *Store) {
	other := s.Create(CreateEvents, "other")
	ok := s.Create(CreateEvents, "base/ok")
	before := s.tree()
	inst := Open(t, d.Start(t, s.Secrets...), "escape", s.Config(s.URI("base/{topic}")))
	for _, topic := range escapingTopics {
		WantStatus(t, inst.Consume(Events(topic, 0, 2)), hostclient.StatusFatal,
			fmt.Sprintf("topic %q", topic), `may not make the path segment ".."`)
	}
	if after := s.tree(); !slices.Equal(after, before) {
		t.Fatalf("store changed by refused batches:\nbefore %v\nafter  %v", before, after)
	}
	s.WantIDs(other, "")

	consume(t, inst, Events("ok", 0, 2)) // a plain topic still resolves
	s.WantIDs(ok, "0,1")
	for _, k := range s.Objects("") {
		if !strings.HasPrefix(k, "base/ok/") && !strings.HasPrefix(k, "other/") {
			t.Fatalf("object %q outside the tables", k)
		}
	}
}
