package connect_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

// Helpers the decode, registry and chaos rigs share.

// committedOffset is group's committed offset of topic's partition 0, -1
// for none.
func committedOffset(t *testing.T, adm *kadm.Client, group, topic string) int64 {
	t.Helper()
	resp, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := resp.Lookup(topic, 0); ok {
		return o.At
	}
	return -1
}

// waitTopicAtEnd waits (timeout at most, restarting procs that exited by
// themselves) until group's committed offsets of topic are its end
// offsets.
func waitTopicAtEnd(t *testing.T, adm *kadm.Client, group, topic string, timeout time.Duration, procs ...*connectProc) {
	t.Helper()
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	waitGroupAtEnds(t, adm, group, ends, timeout, procs...)
}

// readDeadLetters reads topic's dead-letter topic from its start: n
// records (20 s at most), and a short poll more to show there are no
// others.
func readDeadLetters(t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	dc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic+".dlq"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	var got []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(got) < n && ctx.Err() == nil {
		dc.PollFetches(ctx).EachRecord(func(rec *kgo.Record) { got = append(got, rec) })
	}
	more, cancelMore := context.WithTimeout(context.Background(), time.Second)
	defer cancelMore()
	dc.PollFetches(more).EachRecord(func(rec *kgo.Record) { got = append(got, rec) })
	return got
}

// redshiftPluginConfig is the [plugin_config] table of a Redshift sink
// loading table through the emulator at dsn, staging in bucket of svc's
// S3; callers append their own keys (batch_size, retries).
func redshiftPluginConfig(svc services.Services, dsn, bucket, table string) string {
	return fmt.Sprintf(`
[plugin_config]
connection_string = %q
target_table = %q
aws_iam_role = %q
s3_bucket = %q
s3_prefix = "redshift"
aws_region = %q
s3_endpoint = %q
aws_access_key_id = %q
aws_secret_access_key = %q
payload_format = "text"
`, dsn, table, rsemu.DefaultRole, bucket, svc.S3Region, svc.S3Endpoint, svc.S3AccessKey, svc.S3SecretKey)
}

// deltaS3PluginConfig is the [plugin_config] table of a Delta sink writing
// uri (a table template allowed) on svc's S3 with its keys, over plain
// HTTP; callers append their own keys.
func deltaS3PluginConfig(svc services.Services, uri string) string {
	return fmt.Sprintf(`
[plugin_config]
table_uri = %q
storage_backend_type = "s3"
aws_s3_access_key = %q
aws_s3_secret_key = %q
aws_s3_region = %q
aws_s3_endpoint_url = %q
aws_s3_allow_http = true
`, uri, svc.S3AccessKey, svc.S3SecretKey, svc.S3Region, svc.S3Endpoint)
}
