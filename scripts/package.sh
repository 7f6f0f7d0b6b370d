#!/usr/bin/env bash
# Builds Corral's Debian packages with Debian's own tooling (dpkg-buildpackage, debhelper) from
# this tree as it is (uncommitted edits included), into dist/ (or $OUT_DIR), then runs lintian
# on them: corral (the CLI and the Slurm shims), corral-head, corral-agent, python3-corral.
#
# The version is $VERSION, else from git in Debian's form: 1.2.0 at a tag v1.2.0, else the last
# tag's version (or the project's) + "git" + the commit count and hash (0.3.0+git338.g1234abc),
# which grows with every commit so that a newer build upgrades an older one; ".dirty" when the
# tree was edited. The binaries report the same version (-DCORRAL_VERSION).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/apt-install.sh debhelper fakeroot lintian
root="$PWD"
out="$(realpath -m "${OUT_DIR:-dist}")"

if [ -z "${VERSION:-}" ]; then
  base="$(sed -n 's/^project(corral VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
  if tag="$(git describe --tags --exact-match 2>/dev/null)"; then
    VERSION="${tag#v}"
  else
    if last="$(git describe --tags --abbrev=0 2>/dev/null)"; then base="${last#v}"; fi
    VERSION="$base+git$(git rev-list --count HEAD).g$(git rev-parse --short HEAD)"
  fi
  if ! git diff --quiet HEAD; then VERSION="$VERSION.dirty"; fi
fi

# A fixed place (ignored by git; $STAGE_DIR where set), so that ccache finds the previous
# build's objects: the compiler's flags name the source directory (dpkg's -ffile-prefix-map).
stage="$(realpath -m "${STAGE_DIR:-$root/build-deb}")"
rm -rf "$stage"
mkdir -p "$stage/corral" "$out"
git ls-files -co --exclude-standard -z | tar -c --null -T - -f - | tar -x -C "$stage/corral"
cat >"$stage/corral/debian/changelog" <<CHANGELOG
corral ($VERSION) unstable; urgency=medium

  * Built from $(git describe --tags --always --dirty) by scripts/package.sh.

 -- Corral developers <corral@example.org>  $(date -R)
CHANGELOG

if command -v ccache >/dev/null; then
  # CCACHE_DIR named: debhelper builds with a HOME of its own, where ccache would start empty.
  CCACHE_DIR="$(ccache -k cache_dir)"
  export CCACHE_DIR CCACHE_BASEDIR="$stage" CCACHE_NOHASHDIR=1
  export CORRAL_CMAKE_ARGS="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
fi
export DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}"
(cd "$stage/corral" && dpkg-buildpackage -b -us -uc)
debs=()
for p in corral corral-head corral-agent python3-corral; do
  debs+=("$(ls "$stage"/${p}_"$VERSION"_*.deb)")
done
cp "${debs[@]}" "$out/"
# Errors fail the build; warnings and notes are printed. LINTIAN=0 skips it (the package test's
# second build, which differs from its first in the version alone).
if [ "${LINTIAN:-1}" != 0 ]; then
  lintian --fail-on error "$stage"/corral_"$VERSION"_*.changes
fi
ls -l "$out"/*_"$VERSION"_*.deb
