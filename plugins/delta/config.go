package delta

import (
	"errors"
	"fmt"

	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Config is the Delta sink's plugin_config, declared once: the same tags
// drive decoding, env overrides, describe() and docs/delta-config.md.
type Config struct {
	TableURI           string `config:"table_uri,required,template" doc:"Table location as a URL: file:///path, s3://bucket/path, az://container/path or gs://bucket/path. Supports {topic} and {topic_segment[n]}"`
	StorageBackendType string `config:"storage_backend_type" doc:"s3, azure or gcs. Enables the matching group of keys. When absent no storage options are passed and the URI has to work on its own, as file:// paths do"`
	ExactlyOnce        bool   `config:"exactly_once" default:"true" doc:"Record the last offset of every commit in a Delta txn action and skip records at or below it on replay. false appends replays again"`
	SkipEmptyPayloads  bool   `config:"skip_empty_payloads" default:"false" doc:"Skip records with an empty payload (tombstones on compacted topics), counted in empty_payloads_skipped. false fails the batch naming the record's offset, as for any payload that is not a JSON object"`

	AWSAccessKey   string `config:"aws_s3_access_key,secret" doc:"S3 access key. Set both keys or neither; neither uses the standard AWS credential chain"`
	AWSSecretKey   string `config:"aws_s3_secret_key,secret" doc:"S3 secret key"`
	AWSRegion      string `config:"aws_s3_region" doc:"Required with s3"`
	AWSEndpointURL string `config:"aws_s3_endpoint_url" doc:"Custom endpoint for MinIO and other S3-compatible stores. Turns on path-style addressing"`
	AWSAllowHTTP   bool   `config:"aws_s3_allow_http" doc:"Allow a plain http:// endpoint. Set for local MinIO"`

	AzureAccountName   string `config:"azure_storage_account_name" doc:"Required with azure"`
	AzureContainerName string `config:"azure_container_name" doc:"Required with azure"`
	AzureAccountKey    string `config:"azure_storage_account_key,secret" doc:"One of this or azure_storage_sas_token with azure, not both"`
	AzureSASToken      string `config:"azure_storage_sas_token,secret" doc:"See azure_storage_account_key"`
	AzureEndpointURL   string `config:"azure_storage_endpoint_url" doc:"Blob service URL when not https://<account>.blob.core.windows.net, e.g. http://127.0.0.1:10000/devstoreaccount1 for Azurite (path-style, the account in the path)"`

	GCSServiceAccountKey string `config:"gcs_service_account_key,secret" doc:"Required with gcs. The service account JSON as a string"`
	GCSEndpointURL       string `config:"gcs_endpoint_url" doc:"Custom GCS endpoint, e.g. http://127.0.0.1:4443 for fake-gcs-server. A plain http:// endpoint is taken for an emulator: requests carry no credentials"`
}

// validateStorage checks the key group of storage_backend_type, with the
// spec's messages, and returns the backend options.
func (c *Config) validateStorage() (objstore.Options, error) {
	var opts objstore.Options
	missing := func(backend, key string) error {
		return sdk.BadConfigf("Invalid storage configuration: %s backend requires '%s'", backend, key)
	}
	switch c.StorageBackendType {
	case "":
	case "s3":
		// Both keys or neither: without keys the standard AWS credential
		// chain (environment, profile, IMDS, web identity) applies.
		if c.AWSAccessKey == "" && c.AWSSecretKey != "" {
			return opts, missing("S3", "aws_s3_access_key")
		}
		if c.AWSSecretKey == "" && c.AWSAccessKey != "" {
			return opts, missing("S3", "aws_s3_secret_key")
		}
		if c.AWSRegion == "" {
			return opts, missing("S3", "aws_s3_region")
		}
		if err := objstore.CheckS3Endpoint(c.AWSEndpointURL, c.AWSAllowHTTP); err != nil {
			return opts, sdk.BadConfigf("Invalid storage configuration: %v", err)
		}
		opts.S3 = objstore.S3Options{
			AccessKey: c.AWSAccessKey, SecretKey: c.AWSSecretKey, Region: c.AWSRegion,
			Endpoint: c.AWSEndpointURL, AllowHTTP: c.AWSAllowHTTP,
		}
	case "azure":
		if c.AzureAccountName == "" {
			return opts, missing("Azure", "azure_storage_account_name")
		}
		if c.AzureContainerName == "" {
			return opts, missing("Azure", "azure_container_name")
		}
		if (c.AzureAccountKey == "") == (c.AzureSASToken == "") {
			return opts, sdk.BadConfigf("Invalid storage configuration: Azure backend requires exactly one of 'azure_storage_account_key' or 'azure_storage_sas_token'")
		}
		if err := errors.Join(objstore.CheckAzureKey(c.AzureAccountKey), objstore.CheckAzureEndpoint(c.AzureEndpointURL)); err != nil {
			return opts, sdk.BadConfigf("Invalid storage configuration: %v", err)
		}
		// The table URI's container must be azure_container_name
		// (objstore.Open refuses a mismatch with "Invalid table URI").
		opts.Azure = objstore.AzureOptions{
			Account: c.AzureAccountName, Container: c.AzureContainerName,
			AccountKey: c.AzureAccountKey, SASToken: c.AzureSASToken, Endpoint: c.AzureEndpointURL,
		}
	case "gcs":
		if c.GCSServiceAccountKey == "" {
			return opts, missing("GCS", "gcs_service_account_key")
		}
		opts.GCS = objstore.GCSOptions{ServiceAccountKey: c.GCSServiceAccountKey, Endpoint: c.GCSEndpointURL}
		if err := objstore.CheckGCS(opts.GCS); err != nil {
			return opts, sdk.BadConfigf("Invalid storage configuration: %v", err)
		}
	default:
		return opts, sdk.BadConfig(fmt.Errorf("Invalid storage configuration: storage_backend_type %q is not one of s3, azure, gcs", c.StorageBackendType))
	}
	return opts, nil
}
