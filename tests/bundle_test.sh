#!/usr/bin/env bash
# The portable bundle (scripts/bundle.sh): built from this build, it must run where none of
# the build's libraries are installed.
#   1. every library the binaries need, but glibc's and the driver's, resolves inside the
#      bundle (ldd with an empty environment); the MANIFEST states the minimum glibc;
#   2. `corral --version` and `corral agent --check --simulate-gpus 2` run from it;
#   3. (root, or where unprivileged user namespaces work) `corral up --demo` runs in a chroot
#      made only of the bundle, the glibc files it needs and a static busybox as /bin/sh: no
#      Debian package, no library of this machine. Exit 77 where that cannot be made (and
#      CI is not "true").
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
BUILD_DIR=${BUILD_DIR:?the build directory}
W="$(mktemp -d /tmp/corral-bundle-test.XXXXXX)"
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
skip() {
  if [ "${CI:-}" = true ]; then fail "$* (CI=true: this must run)"; fi
  echo "SKIP: $*"
  exit 77
}
command -v patchelf >/dev/null || skip "patchelf is missing (scripts/setup-tests.sh)"
# The build as it is: ctest runs other tests beside this one, on the same binaries.
out="$(BUNDLE_NO_BUILD=1 OUT_DIR="$W/dist" "$src/scripts/bundle.sh" "$BUILD_DIR")"
echo "$out"
dir="${out%%$'\n'*}"
[ -f "$dir.tar.gz" ] || fail "no tarball beside $dir"
cat "$dir/MANIFEST"
grep -q '^needs glibc >= 2\.[0-9]*' "$dir/MANIFEST" || fail "MANIFEST states no minimum glibc"
for f in corral corral-monitor libcorral_gpushare.so; do [ -e "$dir/bin/$f" ] || fail "no bin/$f"; done
# 1. Nothing outside the bundle but glibc (and, for the probe, the driver's libcuda).
for f in "$dir"/bin/* "$dir"/lib/*; do
  { env -i ldd "$f" 2>/dev/null | grep '=>' || true; } | while read -r soname _ path _; do
    case "$soname" in libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | \
      libresolv.so.* | ld-linux*) continue ;; esac
    [[ $(realpath -m "$path") == "$dir"/lib/* ]] || fail "$f needs $soname from $path, outside the bundle"
  done
done
grep -q '^lib/libstdc++.so.6 ' "$dir/MANIFEST" || fail "libstdc++ is not bundled"
# 2. It runs from the bundle with an empty environment.
env -i "$dir/bin/corral" --version | tee "$W/version" | grep -q '^corral ' || fail "--version"
env -i PATH=/usr/bin:/bin "$dir/bin/corral" agent --check --simulate-gpus 2 --cgroups off \
  >"$W/check" 2>&1 || true
cat "$W/check"
grep -q 'ok    NVML .*simulated GPUs (--simulate-gpus): 2' "$W/check" || fail "agent --check"
grep -q "share shim .*$dir/bin/libcorral_gpushare.so" "$W/check" || fail "the shim beside corral"

# 3. A chroot with nothing but the bundle, glibc and busybox.
busybox="$(command -v busybox || true)"
[ -n "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 || skip "no static busybox (busybox-static)"
if [ "$(id -u)" -eq 0 ]; then enter=(unshare -mpf); else enter=(unshare -Urmpf); fi
"${enter[@]}" true 2>/dev/null || skip "cannot make mount and pid namespaces here"
root="$W/root"
mkdir -p "$root"/{bin,tmp,proc,dev,etc,opt} "$root/lib64" "$root/lib/x86_64-linux-gnu"
cp -a "$dir" "$root/opt/corral"
for f in "$root"/opt/corral/bin/* "$root"/opt/corral/lib/*; do
  ldd "$f" 2>/dev/null | grep -o '/[^ ]*\(libc\|libm\|libdl\|libpthread\|librt\|libresolv\|ld-linux-x86-64\)\.so[.0-9]*' || true
done | sort -u | while read -r lib; do cp -L "$lib" "$root$lib"; done
cp "$busybox" "$root/bin/busybox"
for app in sh echo sleep cat seq; do ln -s busybox "$root/bin/$app"; done
echo "root:x:0:0:root:/tmp:/bin/sh" >"$root/etc/passwd"
echo "$(id -un):x:$(id -u):$(id -g)::/tmp:/bin/sh" >>"$root/etc/passwd"
echo "files in the chroot besides the bundle: $(find "$root" -path "$root/opt" -prune -o -type f -print | wc -l)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"${enter[@]}" /bin/sh -c "mount -t proc proc '$root/proc' && mount --rbind /dev '$root/dev' &&
  exec chroot '$root' /opt/corral/bin/corral up --agents 2 --gpus-per-agent 4 \
    --state-dir /tmp/state --listen 127.0.0.1:$port --no-user-config --demo" >"$W/demo" 2>&1 ||
  { cat "$W/demo" "$root"/tmp/state/head.log 2>/dev/null | tail -40; fail "corral up --demo in the chroot"; }
cat "$W/demo"
grep -q "all sample jobs ended as expected" "$W/demo" || fail "the demo's jobs"
echo "PASS: the bundle runs corral up --demo in a chroot of itself, glibc and busybox"
