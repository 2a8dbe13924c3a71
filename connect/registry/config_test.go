package registry_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/registry"
)

func TestConfigNeverShowsSecrets(t *testing.T) {
	cfg := registry.Config{URLs: []string{"http://r:8081"}, BasicAuth: "alice:s3cr3t-pw"}
	tok := registry.Config{URLs: []string{"http://r:8081"}, BearerToken: "t0ken-s3cr3t"}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", &cfg),
		fmt.Sprint(tok), fmt.Sprintf("%#v", tok)} {
		if strings.Contains(s, "s3cr3t") || strings.Contains(s, "alice") {
			t.Fatalf("config printed as %q", s)
		}
		if !strings.Contains(s, "http://r:8081") || !strings.Contains(s, "(redacted)") {
			t.Fatalf("config printed as %q: want the URL and the auth kind", s)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  registry.Config
		want string
	}{
		{"no url", registry.Config{}, "no URL"},
		{"credentials in url", registry.Config{URLs: []string{"https://bob:s3cr3t@r:8081/x"}}, "carries credentials"},
		{"not http", registry.Config{URLs: []string{"r:8081"}}, "not an http or https URL"},
		{"both auths", registry.Config{URLs: []string{"http://r"}, BasicAuth: "a:s3cr3t", BearerToken: "s3cr3t"}, "both set"},
		{"basic without colon", registry.Config{URLs: []string{"http://r"}, BasicAuth: "s3cr3t"}, "user:password form"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("error leaks the secret: %v", err)
			}
		})
	}
}
