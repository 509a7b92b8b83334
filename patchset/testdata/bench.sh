#!/usr/bin/env bash
# Measures bringup patch on a real package: one patch per .py file of pip
# (copied from the local CPython's site-packages), then status, apply,
# status, revert — wall time and peak RSS — beside sha256sum over the same
# files as the floor (status is mostly hashing).
# Usage: patchset/testdata/bench.sh   (from the repository root)
set -euo pipefail
work=$(mktemp -d /tmp/bringup-patch-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/bringup" ./cmd/bringup
site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$work/root" "$work/patches"
cp -r "$site"/pip "$site"/pip-*.dist-info "$work/root/"
cd "$work"
find root/pip -name '*.py' -size +1k | sort > files
n=0
while read -r f; do
  rel=${f#root/}
  sed '1s/^/# bringup bench edit\n/' "$f" > edited.py
  name=$(printf '%04d.patch' "$n")
  ./bringup patch new --root root --target "$rel" -o "patches/$name" edited.py >/dev/null
  echo "$name" >> patches/series
  n=$((n+1))
done < files
bytes=$(cat $(cat files) | wc -c)
echo "patches: $n  target bytes: $bytes"
measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o t.out "$@" >/dev/null 2>&1 || true
  read -r wall rss < t.out
  printf '%-28s wall %6ss  peak RSS %7s KiB\n' "$label" "$wall" "$rss"
}
measure "sha256sum (floor)" sh -c "cat files | xargs sha256sum"
measure "patch status (base)" ./bringup patch status --root root patches
measure "patch apply" ./bringup patch apply --root root patches
measure "patch status (patched)" ./bringup patch status --root root patches
measure "patch revert" ./bringup patch revert --root root patches
measure "patch status --json" ./bringup patch status --json --root root patches
./bringup patch status --root root patches | head -1
