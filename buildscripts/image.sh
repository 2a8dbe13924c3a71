#!/usr/bin/env bash
# Builds the container image of the linux/amd64 release (make image VERSION=x.y.z):
#   dist/picomq-heavy-sinks-<version>-image-linux-amd64/       an OCI image layout directory
#   dist/picomq-heavy-sinks-<version>-image-linux-amd64.tar    the same image for `docker load`
# and prints the image's manifest digest. docs/deploy.md says what is in it and how to run it.
#
# No container engine, and nothing pulled from a registry: the base layer is the pinned Debian
# packages below (glibc for the plugins and picomq-host, CA certificates), fetched with
# `apt-get download` into .cache/image/debs, checked against their SHA-256 and extracted with
# dpkg-deb by tools/ociimage, which also adds the release tarball's files under /opt/picomq.
#
# Reproducible: the same commit (the release tarball is, see buildscripts/release.sh) and the same
# packages give the same digest: entries sorted, owned by 0:0, dated at SOURCE_DATE_EPOCH (the
# commit's), as is every time in the image config. When the Debian mirror drops a pinned version
# (a point release supersedes it), bump the pin and its checksum: the digest changes with it.
#
# Environment:
#   VERSION                 x.y.z (optionally -suffix), default 0.0.0-dev
#   IMAGE_RELEASE_TARBALL   use this release tarball instead of building one (release.sh, amd64)
#   IMAGE_OUT               output directory, default dist
#   RELEASE_ALLOW_DIRTY     passed to release.sh: 1 builds from uncommitted changes (not a release)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

die() { echo "image: $*" >&2; exit 1; }

# Debian 12 (bookworm) packages of the base layer: name, version, SHA-256 of the .deb.
# libc6 >= 2.34: the libraries and picomq-host need GLIBC_2.34 (README, "Release").
PACKAGES=(
  "libc6 2.36-9+deb12u14 ba4f88f73dbc3ae9055f3c20f4523bfdbaf1ad13ff95e258924f77d20b4fbedf"
  "ca-certificates 20230311+deb12u1 0d5f444f594e48c1e16a41d8fc628a09b24c658916a1274025c2330f2a802bed"
)
ARCH=amd64

VERSION=${VERSION:-0.0.0-dev}
OUT=${IMAGE_OUT:-dist}
CACHE=$ROOT/.cache/image
NAME=picomq-heavy-sinks-$VERSION
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}

TARBALL=${IMAGE_RELEASE_TARBALL:-}
if [ -z "$TARBALL" ]; then
  VERSION=$VERSION RELEASE_ARCHES=$ARCH RELEASE_OUT=$CACHE/release buildscripts/release.sh >&2
  TARBALL=$CACHE/release/$NAME-linux-$ARCH.tar.gz
fi
[ -f "$TARBALL" ] || die "no release tarball $TARBALL"

mkdir -p "$CACHE/debs" "$OUT"
debs=()
for p in "${PACKAGES[@]}"; do
  read -r pkg ver sum <<<"$p"
  # apt-get download names the file <pkg>_<version, ':' as %3a>_<arch>.deb.
  deb=$(ls "$CACHE/debs/${pkg}_${ver//:/%3a}_"*.deb 2>/dev/null | head -1 || true)
  if [ -z "$deb" ]; then
    command -v apt-get >/dev/null || die "$pkg $ver is not in $CACHE/debs and there is no apt-get to download it"
    echo "image: apt-get download $pkg=$ver" >&2
    (cd "$CACHE/debs" && apt-get download -q "$pkg=$ver" >&2) ||
      die "apt-get download $pkg=$ver failed; if the mirror dropped this version, bump the pin in $0"
    deb=$(ls "$CACHE/debs/${pkg}_${ver//:/%3a}_"*.deb | head -1)
  fi
  got=$(sha256sum "$deb" | cut -d' ' -f1)
  [ "$got" = "$sum" ] || die "$deb: SHA-256 $got, pinned $sum"
  debs+=(-deb "$deb")
done

go run ./tools/ociimage -release "$TARBALL" "${debs[@]}" -epoch "$SOURCE_DATE_EPOCH" \
  -version "$VERSION" -revision "$(git rev-parse HEAD)" -arch "$ARCH" \
  -layout "$OUT/$NAME-image-linux-$ARCH" -docker-tar "$OUT/$NAME-image-linux-$ARCH.tar"
