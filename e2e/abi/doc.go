// Package abi holds the end-to-end tests of the plugin C ABI: real plugin
// libraries (dist/, built by buildscripts/build.sh) loaded into the real C
// host (e2e/host) and driven through e2e/hostdriver. Run them with `make e2e`.
package abi
