package redshift

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The region of the credentials call: iam_region, else the one in the
// endpoint's host name, else aws_region.
func TestIAMTargetRegion(t *testing.T) {
	for _, tc := range []struct {
		iamRegion, conn, want string
	}{
		{"ap-south-1", "postgres://u@c.abc.us-east-1.redshift.amazonaws.com:5439/dev", "ap-south-1"},
		{"", "postgres://u@c.abc.us-east-1.redshift.amazonaws.com:5439/dev", "us-east-1"},
		{"", "postgres://u@wg.123456789012.eu-north-1.redshift-serverless.amazonaws.com:5439/dev", "eu-north-1"},
		{"", "postgres://u@127.0.0.1:5439/dev", "eu-west-1"}, // aws_region
	} {
		c := validConfig()
		c.Auth, c.IAMClusterIdentifier, c.IAMRegion, c.IAMDuration = authIAM, "c", tc.iamRegion, 15*time.Minute
		cc, err := pgx.ParseConfig(tc.conn)
		if err != nil {
			t.Fatal(err)
		}
		tg := c.iamTarget(cc)
		if tg.Region != tc.want || tg.DbName != "dev" || tg.Cluster != "c" {
			t.Errorf("%s with iam_region %q: %+v, want region %s", tc.conn, tc.iamRegion, tg, tc.want)
		}
	}
}

func TestValidateAuth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   string // "" for valid
	}{
		{"password default", func(c *Config) {}, ""},
		{"iam cluster", func(c *Config) { c.Auth, c.IAMClusterIdentifier = "IAM", "c" }, ""},
		{"iam cluster and db user", func(c *Config) { c.Auth, c.IAMClusterIdentifier, c.IAMDbUser = "iam", "c", "loader" }, ""},
		{"iam workgroup", func(c *Config) { c.Auth, c.IAMWorkgroupName = "iam", "wg" }, ""},
		{"iam workgroup and db user", func(c *Config) { c.Auth, c.IAMWorkgroupName, c.IAMDbUser = "iam", "wg", "loader" },
			"iam_db_user applies only with iam_cluster_identifier"},
		{"iam neither", func(c *Config) { c.Auth = "iam" }, "needs iam_cluster_identifier"},
		{"iam 61 minutes", func(c *Config) { c.Auth, c.IAMClusterIdentifier, c.IAMDuration = "iam", "c", 61*time.Minute },
			"iam_duration must be whole seconds from 15m0s to 1h0m0s, got 1h1m0s"},
		{"iam fraction", func(c *Config) {
			c.Auth, c.IAMClusterIdentifier, c.IAMDuration = "iam", "c", 15*time.Minute+time.Millisecond
		},
			"iam_duration must be whole seconds"},
		{"password with region", func(c *Config) { c.IAMRegion = "eu-west-1" }, `iam_region applies only with auth = "iam"`},
		{"password with db user", func(c *Config) { c.Auth, c.IAMDbUser = "password", "x" }, `iam_db_user applies only with auth = "iam"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			c.IAMDuration = 15 * time.Minute
			tc.change(&c)
			p, _, err := c.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && p.iam != (c.Auth != "" && c.Auth != "password"):
				t.Fatalf("iam = %v for auth %q", p.iam, c.Auth)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
