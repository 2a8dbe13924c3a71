// Package services hands integration tests the real PostgreSQL, MinIO,
// Azurite and fake-gcs-server that buildscripts/services.sh runs, and gives
// each test its own database, bucket or container.
//
// Use it from any test that needs a database, S3, Azure or GCS:
//
//	svc := services.Require(t)        // fails the test when the services are not running
//	db := svc.NewDatabase(t)          // CREATE DATABASE, dropped in t.Cleanup
//	bucket := svc.NewBucket(t)        // created, emptied and removed in t.Cleanup
//	client := svc.S3Client()          // path-style client for MinIO
//
//	az := services.RequireAzure(t)    // Azurite: endpoint, account, key
//	c := az.NewAzureContainer(t)      // created, deleted with its blobs in t.Cleanup
//	sas := az.AzureContainerSAS(t, c) // a SAS token for c
//	gcs := services.RequireGCS(t)     // fake-gcs-server endpoint
//	b := gcs.NewGCSBucket(t)          // created, emptied and removed in t.Cleanup
//	key, marker := gcs.GCSServiceAccountKey() // an emulator key, for the sink and delta-rs
//	kafka := services.RequireKafka(t) // the Apache Kafka broker answers: kafka.KafkaBrokers
//	reg := services.RequireSchemaRegistry(t) // the registry lists subjects: reg.SchemaRegistryURL
//
//	p := services.StartPrivate(t, "postgres", "minio") // instances of this test's own
//	p.Restart(t, "minio")                              // which it may stop and start
//
// Connection details come from the environment (PICOMQ_TEST_PG_DSN,
// PICOMQ_TEST_S3_ENDPOINT, PICOMQ_TEST_S3_ACCESS_KEY, PICOMQ_TEST_S3_SECRET_KEY,
// PICOMQ_TEST_S3_REGION, PICOMQ_TEST_AZURE_ENDPOINT, PICOMQ_TEST_AZURE_ACCOUNT,
// PICOMQ_TEST_AZURE_KEY, PICOMQ_TEST_GCS_ENDPOINT, PICOMQ_KAFKA_BROKERS,
// PICOMQ_SCHEMA_REGISTRY_URL) and, for any that are
// unset, from the .services.env file that `buildscripts/services.sh start`
// writes at the repository root.
// A missing service fails the test; it never skips, because in CI a missing
// service is a broken build, not an optional extra.
//
// Files: services.go (lookup and Require), postgres.go (per-test databases),
// s3.go (client and per-test buckets), azure.go (per-test containers, SAS
// tokens), gcs.go (client, per-test buckets, emulator keys), kafka.go
// (RequireKafka), registry.go (RequireSchemaRegistry), private.go (a test's own instances, via services.sh).
package services
