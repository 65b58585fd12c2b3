#!/bin/bash
# The plain OpenCL checks of vcl_basic through a proxy of its own,
# clSetKernelArg sending nothing (MPIGPU_VCL_STATS message counts), and
# clFinish's FINISH: both of its ways taken (inline, and without waiting
# while a user event is unset), and a clFinish longer than
# MPIGPU_VCL_TIMEOUT that still succeeds; spinning waits.  With a proxy
# whose completion callbacks send nothing (MPIGPU_PROXY_TEST_DROP_CALLBACKS,
# as PoCL 3.1 for a command behind a failed event), every wait still ends:
# the client asks FINISH again while it waits.
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
# Spinning before sleeping (MPIGPU_PROXY_SPIN, MPIGPU_VCL_SPIN: on by default only on
# hosts of 8 CPUs or more), both sides, and a bad setting refused.
MPIGPU_PROXY_SPIN=50 start_proxy pxspin
MPIGPU_VCL_SPIN=50 timeout 300 "$top/test/remote/vcl_basic" || fail "vcl_basic with spinning"
stop_proxy "$PROXY_PID"
MPIGPU_PROXY_SPIN=fast "$top/mpigpu-proxy" --listen 127.0.0.1:0 --key-file "$work/key" \
    2>"$work/badspin.log" && fail "MPIGPU_PROXY_SPIN=fast accepted"
grep -q "MPIGPU_PROXY_SPIN" "$work/badspin.log" || fail "no message for MPIGPU_PROXY_SPIN=fast"
MPIGPU_PROXY_TEST_DROP_CALLBACKS=1 start_proxy pxdrop
timeout 300 "$top/test/remote/vcl_basic" || fail "vcl_basic with no completion callbacks"
MPIGPU_VCL_SHM=0 timeout 300 "$top/test/remote/vcl_basic" ||
    fail "vcl_basic with no completion callbacks, stream lane"
stop_proxy "$PROXY_PID"
grep "FINISH" "$work/pxdrop.log" | sed 's/.*: FINISH/FINISH/'
grep -q "FINISH .* 0 by callback" "$work/pxdrop.log" || fail "a callback sent a completion"
grep -q "session 1: client .* connected and authenticated" "$work/px.log" || fail "no connect log"
fin=$(grep -m 1 "session 1 .*: FINISH" "$work/px.log")
echo "${fin#*: }"
inl=$(echo "$fin" | sed -n 's/.*FINISH \([0-9]*\) inline, \([0-9]*\) without.*/\1 \2/p')
set -- $inl
[ "${1:-0}" -gt 0 ] || fail "no FINISH ran inline"
[ "${2:-0}" -gt 0 ] || fail "no FINISH left the waiting to callbacks (unset user event)"
echo "PASS"
