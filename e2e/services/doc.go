// Package services hands integration tests the real PostgreSQL and MinIO that
// buildscripts/services.sh runs, and gives each test its own database and
// bucket.
//
// Use it from any test that needs a database or S3:
//
//	svc := services.Require(t)        // fails the test when the services are not running
//	db := svc.NewDatabase(t)          // CREATE DATABASE, dropped in t.Cleanup
//	bucket := svc.NewBucket(t)        // created, emptied and removed in t.Cleanup
//	client := svc.S3Client()          // path-style client for MinIO
//
// Connection details come from the environment (PICOMQ_TEST_PG_DSN,
// PICOMQ_TEST_S3_ENDPOINT, PICOMQ_TEST_S3_ACCESS_KEY, PICOMQ_TEST_S3_SECRET_KEY,
// PICOMQ_TEST_S3_REGION) and, for any that are unset, from the .services.env
// file that `buildscripts/services.sh start` writes at the repository root.
// A missing service fails the test; it never skips, because in CI a missing
// service is a broken build, not an optional extra.
//
// Files: services.go (lookup and Require), postgres.go (per-test databases),
// s3.go (client and per-test buckets).
package services
