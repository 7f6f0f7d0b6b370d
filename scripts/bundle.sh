#!/usr/bin/env bash
# Builds a portable bundle of Corral's node and head binaries, for machines that have glibc and
# (on GPU nodes) an NVIDIA driver but none of the build's libraries and no Debian packages:
#   dist/corral-bundle-VERSION/        bin/corral, bin/corral-monitor, bin/corral-container,
#                                      bin/libcorral_gpushare.so (beside corral: the agent finds
#                                      the share shim there), lib/ (every shared library they
#                                      need but glibc's, libstdc++ and libgcc_s included),
#                                      MANIFEST (version, minimum glibc, each file's origin)
#                                      libexec/corral-gpushare-probe (where the build has tests: a
#                                      CUDA program in miniature on the driver's libcuda, which
#                                      tests/gpu/run_suite.sh runs in jobs)
#   dist/corral-bundle-VERSION.tar.gz  the same directory
# The binaries and libraries get the run path $ORIGIN/../lib (libraries: $ORIGIN), so nothing
# is read from the system but glibc (libc, libm, ld-linux, ...) and, at run time, the driver's
# own libnvidia-ml.so.1 and libcuda.so.1, which only the driver may provide.
#
# Usage: scripts/bundle.sh [BUILD_DIR]   (default build; built first with ninja if needed)
# Env: OUT_DIR (default dist), VERSION (default: what the built corral reports),
# BUNDLE_NO_BUILD=1: bundle the build as it is (tests, which ctest runs side by side).
set -euo pipefail
cd "$(dirname "$0")/.."
build="$(realpath "${1:-build}")"
out="$(realpath -m "${OUT_DIR:-dist}")"
command -v patchelf >/dev/null || {
  echo "bundle.sh: patchelf is missing (scripts/setup-tests.sh installs it)" >&2
  exit 1
}
targets=(corral corral-monitor corral-container corral_gpushare)
if [ -f "$build/build.ninja" ] && [ -z "${BUNDLE_NO_BUILD:-}" ]; then
  # The probe only where the build has tests (CORRAL_TESTS).
  targets+=($(ninja -C "$build" -t targets all | grep -o '^corral_gpushare_probe' | head -1))
  nice ninja -C "$build" "${targets[@]}" >/dev/null
fi
for f in corral corral-monitor libcorral_gpushare.so; do
  [ -x "$build/$f" ] || [ -f "$build/$f" ] || {
    echo "bundle.sh: $build/$f is missing (build it first)" >&2
    exit 1
  }
done
version="${VERSION:-$("$build/corral" --version | awk '{print $2}')}"
name="corral-bundle-$version"
dir="$out/$name"
rm -rf "$dir" "$dir.tar.gz"
mkdir -p "$dir/bin" "$dir/lib"
probe="$build/src/gpushare/corral_gpushare_probe"

# glibc's own libraries: the target's must be used (they go with its ld-linux and its kernel
# interface), so they are never bundled. Everything else is.
is_glibc() {
  case "$1" in
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libresolv.so.* | \
      libutil.so.* | libanl.so.* | libnsl.so.* | libBrokenLocale.so.* | libmvec.so.* | \
      libnss_*.so.* | ld-linux*.so.* | linux-vdso.so.*) return 0 ;;
    # The driver's own: only the machine's driver may provide them (the probe's stub is not).
    libcuda.so.* | libnvidia-ml.so.*) return 0 ;;
  esac
  return 1
}

manifest="$dir/MANIFEST"
{
  echo "corral bundle $version"
  echo "built on $(. /etc/os-release && echo "$PRETTY_NAME") with $(ldd --version | head -1)"
} >"$manifest"

bundle_libs_of() {  # copies the non-glibc libraries FILE needs into lib/, recursively via ldd
  local file=$1 soname path
  while read -r soname _ path _; do
    [ -n "$path" ] && [ "${path:0:1}" = / ] || continue
    is_glibc "$soname" && continue
    [ -e "$dir/lib/$soname" ] && continue
    cp -L "$path" "$dir/lib/$soname"
    chmod 0644 "$dir/lib/$soname"
    echo "lib/$soname  from $(dpkg -S "$(realpath "$path")" 2>/dev/null | cut -d: -f1 || echo '?')" \
      >>"$manifest"
  done < <(ldd "$file" 2>/dev/null | grep '=>' || true)
}

for f in corral corral-monitor corral-container libcorral_gpushare.so; do
  [ -e "$build/$f" ] || continue # corral-container: optional (sanitized builds)
  cp -L "$build/$f" "$dir/bin/$f"
  bundle_libs_of "$dir/bin/$f"
done
if [ -x "$probe" ]; then
  mkdir -p "$dir/libexec"
  cp "$probe" "$dir/libexec/corral-gpushare-probe"
  patchelf --remove-rpath "$dir/libexec/corral-gpushare-probe" # the build's stub libcuda
fi
# The binaries look in ../lib; each library looks beside itself (a run path is not inherited:
# a library's own needs are searched by its own run path).
for f in "$dir"/bin/*; do
  if patchelf --print-interpreter "$f" >/dev/null 2>&1 || [[ $f == *.so ]]; then
    if [ -n "$(patchelf --print-needed "$f" 2>/dev/null | grep -v -E '^(libc|libm|libdl|libpthread|ld-linux)' || true)" ]; then
      patchelf --set-rpath '$ORIGIN/../lib' "$f"
    fi
  fi
done
for f in "$dir"/lib/*; do
  [ -e "$f" ] || continue
  patchelf --set-rpath '$ORIGIN' "$f"
done

# The newest glibc symbol version any file uses is the oldest glibc the bundle runs on.
min_glibc="$(for f in "$dir"/bin/* "$dir"/lib/* "$dir"/libexec/*; do
  [ -e "$f" ] && objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' || true
done | sed 's/GLIBC_//' | sort -u -V | tail -1)"
{
  echo "needs glibc >= $min_glibc (not bundled; libstdc++ and libgcc_s are)"
  echo "bin/ and lib/: $(du -sh "$dir" | cut -f1)"
} >>"$manifest"
tar -C "$out" -czf "$dir.tar.gz" "$name"
echo "$dir"
echo "$dir.tar.gz ($(du -h "$dir.tar.gz" | cut -f1)); needs glibc >= $min_glibc"
