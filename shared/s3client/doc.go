// Package s3client builds the AWS SDK S3 client both sinks use: the Delta
// sink's s3 backend (plugins/delta/objstore) and the Redshift sink's
// staging store. Use it for every S3 client in the project, so that the
// endpoint check, the credential rule (static keys, both or neither, else
// the default AWS chain), path-style addressing for custom endpoints, the
// retry policy and the silenced SDK logger are decided in one place.
//
// The package knows no plugin's configuration: its errors say which
// setting is wrong (ErrNoAccessKey, ErrNoSecretKey, *EndpointError) and the
// plugin names its own config key when it renders the message.
package s3client
