#!/bin/sh
# mpigpu-info as a singleton (no mpiexec): it names the library's version,
# lists the platforms, the device choice and the method table, and exits 0;
# a malformed setting makes MPI_Init fail and mpigpu-info exit 1 with the
# variable named.  Run by make check with abs_top_builddir in the environment.
set -u
info=${abs_top_builddir:-.}/mpigpu-info
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
MPIGPU_CACHE_DIR=$tmp/cache timeout 300 "$info" >"$tmp/out" 2>&1
rc=$?
for want in '^mpigpu ' '^OpenCL platforms: ' '^Device choice' '^Pack method table'; do
    grep -q "$want" "$tmp/out" || { echo "info: no line matching '$want'" >&2; fail=1; }
done
[ $rc -eq 0 ] || { echo "info: exit $rc" >&2; fail=1; }
MPIGPU_P2P_DEPTH=0 timeout 300 "$info" >"$tmp/bad" 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q 'MPIGPU_P2P_DEPTH=0 ' "$tmp/bad"; then
    echo "info: MPIGPU_P2P_DEPTH=0: exit $rc, expected 1 and a message naming it" >&2
    fail=1
fi
[ $fail -eq 0 ] || cat "$tmp/out" "$tmp/bad"
exit $fail
