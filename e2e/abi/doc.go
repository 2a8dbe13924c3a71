// Package abi holds the end-to-end tests of the plugin C ABI: real plugin
// libraries (dist/, built by buildscripts/build.sh) loaded into the real C
// host (cmd/picomq-host) and driven through shared/hostclient. Run them with
// `make e2e`.
package abi
