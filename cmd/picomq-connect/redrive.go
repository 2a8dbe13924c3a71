package main

import "fmt"

// runRedrive is `picomq-connect redrive <definition>`: not built yet (issue 26).
func runRedrive(args []string) int {
	fmt.Fprintln(stderr, "picomq-connect redrive: not implemented yet")
	return exitUsage
}
