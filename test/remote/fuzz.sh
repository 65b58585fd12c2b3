#!/bin/bash
# Short libFuzzer passes over the proxy (make fuzz runs longer), one per
# mode of fuzz/mgrm-fuzz (src/remote/proxy/fuzz_wire.c): dry (the decoders
# and a session stopped before OpenCL), then a few seconds each of real (the
# handlers against the OpenCL device), handshake and bulk (the bulk lane's
# stripes).  Any crash, overread, leak or undefined behaviour fails the test.
# Leaks inside PoCL are not judged (fuzz-lsan.supp): PoCL 3.1 keeps a few
# bytes of each command queued behind a failed event.
top=${abs_top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
src=$(cd "$(dirname "$0")" && pwd)
fuzz=$top/fuzz/mgrm-fuzz
# One suppressions file: ours and the one LSAN_OPTIONS names already (the
# sanitizer build's test/lsan.supp), since LSan reads only the last
# suppressions= it is given.
log=$(mktemp "${TMPDIR:-/tmp}/mgrm-fuzz.XXXXXX")
supp=$(mktemp "${TMPDIR:-/tmp}/mgrm-fuzz-supp.XXXXXX")
trap 'rm -f "$log" "$supp"' EXIT
cat "$src/fuzz-lsan.supp" >"$supp"
rest=
IFS=: read -ra opts <<<"${LSAN_OPTIONS:-}"
for o in "${opts[@]}"; do
    case $o in
    suppressions=*) cat "${o#suppressions=}" >>"$supp" 2>/dev/null ;;
    "") ;;
    *) rest="$rest:$o" ;;
    esac
done
export LSAN_OPTIONS="suppressions=$supp$rest"
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
