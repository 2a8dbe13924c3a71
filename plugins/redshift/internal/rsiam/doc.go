// Package rsiam gets temporary Redshift database credentials from AWS for
// IAM authentication, and keeps them fresh: redshift:GetClusterCredentials
// (with a db user) or redshift:GetClusterCredentialsWithIAM (without) for a
// provisioned cluster, redshift-serverless:GetCredentials for a Serverless
// workgroup, signed with the default AWS credential chain.
//
// Use New for a Source, then a Cache in front of it: the Redshift sink asks
// the Cache for a user and password each time its pool opens a connection.
// Redshift checks a password only at login, so a connection that is open
// when its credentials expire keeps working; only new connections need
// fresh ones.
//
// Nothing here imports the plugin SDK or a database driver. The temporary
// password never appears in an error of this package.
//
// Files:
//
//   - source.go  Target, Credentials, the AWS calls and their error classes
//   - cache.go   Cache: one set of credentials, refreshed ahead of expiry
//   - region.go  the region named by a Redshift endpoint host name
package rsiam
