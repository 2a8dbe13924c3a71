// Package release tests the release tarballs buildscripts/release.sh makes
// (make release VERSION=x.y.z), reading them with Go's own tar, ELF and build
// info readers rather than the tools the script used:
//
//   - TestReleaseTarball (make test): one linux/amd64 release from the working
//     tree; its layout, modes, owners and dates, SHA256SUMS, the exported
//     symbols against include/picomq_sink.h, the glibc floor, the manifest and
//     SBOM against the modules compiled in, and the released host and plugins
//     running: describe, and a Delta commit read back by delta-rs.
//   - TestImage (make test): the container image of that same release
//     (buildscripts/image.sh, twice: one digest), read back with
//     go-containerregistry, no container engine: config, files, owners and
//     dates, and a base layer that has what the binaries need to run.
//   - TestReleaseReproducible (make release-check, PICOMQ_RELEASE_CHECK=1): two
//     clones of HEAD at different paths, the second with an empty Go build
//     cache, each building amd64 and arm64; the tarballs must be the same bytes,
//     and each gets the checks above. arm64 runs under qemu-aarch64-static when
//     it is installed.
//   - TestShipsNoTestCode (make test): no Go program in a release links package
//     testing or a test helper package (internal/testenv/..., *test), by
//     go list -deps.
package release
