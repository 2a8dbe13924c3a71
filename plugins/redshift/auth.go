package redshift

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/picomq/heavy-sinks/plugins/redshift/internal/rsiam"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// auth = "iam": each new connection of the pool logs in with temporary
// credentials from AWS (package rsiam), cached and refreshed ahead of their
// expiry. Redshift checks a password only at login, so connections already
// open are not affected when their credentials expire.

// Values of auth.
const (
	authPassword = "password"
	authIAM      = "iam"
)

// Redshift's DurationSeconds range, for GetClusterCredentials[WithIAM] and
// Serverless GetCredentials alike.
const (
	minIAMDuration = 15 * time.Minute
	maxIAMDuration = time.Hour
)

// validateAuth checks auth and the iam_* keys without any I/O.
func (c *Config) validateAuth(p *parsed) error {
	iamKeys := []struct{ key, value string }{
		{keyIAMCluster, c.IAMClusterIdentifier}, {keyIAMWorkgroup, c.IAMWorkgroupName},
		{keyIAMDbUser, c.IAMDbUser}, {keyIAMRegion, c.IAMRegion},
	}
	switch strings.ToLower(strings.TrimSpace(c.Auth)) {
	case authPassword, "":
		// A half-switched configuration would otherwise log in with a
		// password while the operator thinks it uses IAM.
		for _, k := range iamKeys {
			if k.value != "" {
				return sdk.BadConfigf("%s applies only with %s = %q (%s is %q)", k.key, keyAuth, authIAM, keyAuth, c.Auth)
			}
		}
		return nil
	case authIAM:
		p.iam = true
	default:
		return sdk.BadConfigf("%s must be %q or %q, got %q", keyAuth, authPassword, authIAM, c.Auth)
	}
	switch {
	case c.IAMClusterIdentifier == "" && c.IAMWorkgroupName == "":
		return sdk.BadConfigf("%s = %q needs %s (a provisioned cluster) or %s (Redshift Serverless)", keyAuth, authIAM, keyIAMCluster, keyIAMWorkgroup)
	case c.IAMClusterIdentifier != "" && c.IAMWorkgroupName != "":
		return sdk.BadConfigf("set only one of %s and %s", keyIAMCluster, keyIAMWorkgroup)
	case c.IAMDbUser != "" && c.IAMWorkgroupName != "":
		return sdk.BadConfigf("%s applies only with %s: Redshift Serverless maps the AWS identity to its database user", keyIAMDbUser, keyIAMCluster)
	}
	if d := c.IAMDuration; d < minIAMDuration || d > maxIAMDuration || d%time.Second != 0 {
		return sdk.BadConfigf("%s must be whole seconds from %s to %s, got %s", keyIAMDuration, minIAMDuration, maxIAMDuration, d)
	}
	return nil
}

// iamTarget is what to ask AWS for, given the parsed connection string:
// credentials for its database, in iam_region, else the region of its
// host, else aws_region.
func (c *Config) iamTarget(cc *pgx.ConnConfig) rsiam.Target {
	region := c.IAMRegion
	if region == "" {
		region = rsiam.RegionOf(cc.Host)
	}
	if region == "" {
		region = c.AWSRegion
	}
	return rsiam.Target{
		Cluster: c.IAMClusterIdentifier, Workgroup: c.IAMWorkgroupName, DbUser: c.IAMDbUser,
		DbName: cc.Database, Duration: c.IAMDuration, Region: region,
	}
}

// useIAM fetches the first credentials and makes every new connection of
// pcfg log in with the cache's current ones. An error is an sdk error:
// BAD_CONFIG for what will fail again (no region, keys AWS does not know,
// unknown cluster), RETRY for the rest (a missing permission, throttling,
// 5xx, no answer, no AWS credentials found yet).
func useIAM(ctx context.Context, c *Config, pcfg *pgxpool.Config, log *slog.Logger) (*rsiam.Cache, error) {
	if pcfg.ConnConfig.Password != "" {
		// pgx also takes a password from PGPASSWORD or the .pgpass file; any
		// of them here means the configuration is not what it says.
		return nil, sdk.BadConfigf("%s = %q: %s must carry no password (nor PGPASSWORD or a .pgpass file supply one): the password is the temporary one from AWS",
			keyAuth, authIAM, keyConnectionString)
	}
	target := c.iamTarget(pcfg.ConnConfig)
	src, err := rsiam.New(ctx, target)
	if errors.Is(err, rsiam.ErrNoRegion) {
		return nil, sdk.BadConfigf("%s: no region for %s: set %s", keyAuth, target.Operation(), keyIAMRegion)
	}
	if err != nil {
		return nil, sdk.BadConfigf("%s: %v", keyAuth, err)
	}
	cache := rsiam.NewCache(src, nil)
	cache.OnFetch = func(cr rsiam.Credentials) {
		log.Debug("IAM credentials for Redshift fetched", "user", cr.User, "expires", cr.Expiration.UTC().Format(time.RFC3339))
	}
	if _, err := cache.Get(ctx); err != nil {
		if rsiam.IsPermanent(err) {
			return nil, sdk.BadConfigf("Failed to get IAM credentials for Redshift (%s): %v", iamWhat(target), err)
		}
		if rsiam.IsNoCredentials(err) {
			// A pod's identity (web identity token, metadata endpoint) may
			// not be there yet when it starts: the environment can change
			// without a config change, so RETRY.
			return nil, sdk.Retryf("Failed to get IAM credentials for Redshift (%s): %v; the runtime opens the sink again later", iamWhat(target), err)
		}
		return nil, sdk.Retryf("Failed to get IAM credentials for Redshift (%s): %v", iamWhat(target), err)
	}
	pcfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		cr, err := cache.Get(ctx)
		if err != nil {
			return fmt.Errorf("getting IAM credentials for a new Redshift connection (%s): %w", iamWhat(target), err)
		}
		cc.User, cc.Password = cr.User, cr.Password
		return nil
	}
	return cache, nil
}

// iamWhat names the target in messages.
func iamWhat(t rsiam.Target) string {
	what := "cluster " + t.Cluster
	if t.Workgroup != "" {
		what = "workgroup " + t.Workgroup
	}
	if t.DbUser != "" {
		what += ", db user " + t.DbUser
	}
	return what + ", region " + t.Region
}
