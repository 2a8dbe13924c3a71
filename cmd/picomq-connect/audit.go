package main

import "fmt"

// runAudit is `picomq-connect audit <definition>`: not built yet (issue 26).
func runAudit(args []string) int {
	fmt.Fprintln(stderr, "picomq-connect audit: not implemented yet")
	return exitUsage
}
