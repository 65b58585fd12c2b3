#!/bin/bash
# Short libFuzzer passes over the proxy (make fuzz runs longer), one per
# mode of fuzz/mgrm-fuzz (src/remote/proxy/fuzz_wire.c): dry (the decoders
# and a session stopped before OpenCL), then a few seconds each of real (the
# handlers against the OpenCL device), handshake and bulk (the bulk lane's
# stripes).  Any crash, overread, leak or undefined behaviour fails the test.
# Leaks inside PoCL are not judged (pocl-lsan.supp): PoCL 3.1 keeps a few
# bytes of each command queued behind a failed event.
top=${abs_top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
src=$(cd "$(dirname "$0")" && pwd)
fuzz=$top/fuzz/mgrm-fuzz
. "$src/lsan-use.sh"
log=$(mktemp "${TMPDIR:-/tmp}/mgrm-fuzz.XXXXXX")
supp=$(mktemp "${TMPDIR:-/tmp}/mgrm-fuzz-supp.XXXXXX")
trap 'rm -f "$log" "$supp"' EXIT
lsan_use "$src/pocl-lsan.supp" "$supp"
timeout 300 "$fuzz" -runs=${MGRM_FUZZ_RUNS:-300000} -max_len=4096 -seed=1 || exit 1
for mode in real handshake bulk; do
    echo "== MGRM_FUZZ_MODE=$mode, ${MGRM_FUZZ_SECONDS:-3} s"
    MGRM_FUZZ_MODE=$mode timeout 300 "$fuzz" -max_total_time=${MGRM_FUZZ_SECONDS:-3} \
        -max_len=4096 -seed=1 >"$log" 2>&1
    rc=$?
    grep -E "^Done" "$log"
    if [ $rc -eq 2 ] && grep -q "no OpenCL device" "$log"; then
        echo "MGRM_FUZZ_MODE=$mode: no OpenCL device, skipped"
        continue
    fi
    [ $rc -eq 0 ] || { grep -B5 -A30 "ERROR\|==ABORT\|SUMMARY" "$log" | head -80; exit 1; }
done
