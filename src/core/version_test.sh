#!/usr/bin/env bash
# version.cmake: the version from an override, a tag, a commit without tags, an edited tree, no
# git at all; and the generated file is left alone when the version did not change.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/version.cmake"
dir="$(mktemp -d /tmp/corral-version-test.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
failures=0
version_of() {  # SOURCE_DIR [OVERRIDE]
  cmake -DSOURCE_DIR="$1" -DFALLBACK=0.3.0 -DOVERRIDE="${2:-}" -DOUTPUT="$dir/version.cc" \
    -P "$script"
  sed -n 's/.*return "\(.*\)";.*/\1/p' "$dir/version.cc"
}
expect() {  # WHAT GOT WANT
  if [ "$2" != "$3" ]; then
    echo "FAIL $1: got '$2', want '$3'"
    failures=$((failures + 1))
  fi
}
mkdir "$dir/src" "$dir/plain"
git -C "$dir/src" init -q
git -C "$dir/src" -c user.name=t -c user.email=t@t commit -q --allow-empty -m one
echo a >"$dir/src/f" && git -C "$dir/src" add f
git -C "$dir/src" -c user.name=t -c user.email=t@t commit -q -m two
hash="$(git -C "$dir/src" rev-parse --short HEAD)"

expect "no tag" "$(version_of "$dir/src")" "0.3.0-g$hash"
echo b >"$dir/src/f"
expect "edited" "$(version_of "$dir/src")" "0.3.0-g$hash-dirty"
git -C "$dir/src" checkout -q f
git -C "$dir/src" tag v1.2.0
expect "tagged" "$(version_of "$dir/src")" "1.2.0"
expect "override" "$(version_of "$dir/src" 1.2.0-1)" "1.2.0-1"
expect "no git" "$(version_of "$dir/plain")" "0.3.0"

touch -d '2000-01-01' "$dir/version.cc"
version_of "$dir/plain" >/dev/null
expect "unchanged file kept" "$(stat -c %Y "$dir/version.cc")" "$(date -d 2000-01-01 +%s)"
[ "$failures" -eq 0 ] && echo "all version cases passed"
exit "$failures"
