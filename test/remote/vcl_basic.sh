#!/bin/bash
# The plain OpenCL checks of vcl_basic through a proxy of its own,
# clSetKernelArg sending nothing (MPIGPU_VCL_STATS message counts), and
# clFinish's FINISH: both of its ways taken (inline, and without waiting
# while a user event is unset), and a clFinish longer than
# MPIGPU_VCL_TIMEOUT that still succeeds.
. "$(dirname "$0")/common.sh"
start_proxy px
timeout 300 "$top/test/remote/vcl_basic" || fail "vcl_basic"
MPIGPU_VCL_TIMEOUT=2 timeout 120 "$top/test/remote/vcl_basic" longfinish ||
    fail "a clFinish of over MPIGPU_VCL_TIMEOUT seconds"
count() {
    MPIGPU_VCL_STATS=1 timeout 60 "$top/test/remote/vcl_basic" setarg "$1" 2>&1 >/dev/null |
        sed -n 's/^mpigpu-vcl: messages=\([0-9]*\) .*/\1/p'
}
m0=$(count 0)
m1000=$(count 1000)
echo "messages: setarg x0 = $m0, setarg x1000 (2000 clSetKernelArg calls) = $m1000"
[ -n "$m0" ] && [ "$m0" -gt 0 ] || fail "no statistics line"
[ "$m0" = "$m1000" ] || fail "clSetKernelArg sent messages ($m0 vs $m1000)"
stop_proxy "$PROXY_PID"
grep -q "session 1: client .* connected and authenticated" "$work/px.log" || fail "no connect log"
fin=$(grep -m 1 "session 1 .*: FINISH" "$work/px.log")
echo "${fin#*: }"
inl=$(echo "$fin" | sed -n 's/.*FINISH \([0-9]*\) inline, \([0-9]*\) without.*/\1 \2/p')
set -- $inl
[ "${1:-0}" -gt 0 ] || fail "no FINISH ran inline"
[ "${2:-0}" -gt 0 ] || fail "no FINISH left the waiting to callbacks (unset user event)"
echo "PASS"
