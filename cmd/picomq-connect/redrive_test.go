package main

import (
	"strings"
	"testing"
)

// redrive refuses, exit 2, a plugin that does not declare redrive in its
// describe() (the test plugin): it would take the dead letters for a
// replay of what it already wrote.
func TestRedriveRefusesAPluginWithoutRedrive(t *testing.T) {
	kf, defDir, _ := setup(t, "")
	logs := captured(t)
	if code := run(append([]string{"redrive"}, args(t, kf, defDir)...)); code != exitUsage {
		t.Fatalf("exit code %d, want %d", code, exitUsage)
	}
	if !strings.Contains(logs.String(), `does not declare \"redrive\"`) {
		t.Errorf("no refusal naming redrive:\n%s", logs)
	}
	if code := run([]string{"redrive"}); code != exitUsage {
		t.Errorf("redrive without a definition: exit code %d, want %d", code, exitUsage)
	}
}
