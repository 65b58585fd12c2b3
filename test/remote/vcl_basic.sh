#!/bin/bash
# The plain OpenCL checks of vcl_basic through a proxy of its own, and
# clSetKernelArg sending nothing (MPIGPU_VCL_STATS message counts).
. "$(dirname "$0")/common.sh"
start_proxy px
timeout 300 "$top/test/remote/vcl_basic" || fail "vcl_basic"
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
echo "PASS"
