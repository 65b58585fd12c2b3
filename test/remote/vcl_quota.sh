#!/bin/bash
# Device-memory quotas and the ID map of a long session (issue 27):
# - a session over its quota, and one over the device's total, get
#   CL_MEM_OBJECT_ALLOCATION_FAILURE at the exact count, the proxy lives on,
#   and another client's work (vcl_basic quick) is correct meanwhile;
# - the same for images, which share the account with buffers;
# - each kind of object is refused at its per-session count limit;
# - 400,000 create/release cycles of an object in one session leave the
#   proxy's memory flat, and its ID map small.
. "$(dirname "$0")/common.sh"
vb=$top/test/remote/vcl_basic
raw=$top/test/remote/rawclient

MPIGPU_PROXY_SESSION_MEM=64M MPIGPU_PROXY_TOTAL_MEM=96M start_proxy px
px=$PROXY_PID addr=$PROXY_ADDR
grep -q "buffers up to 100663296 bytes in all" "$work/px.log" || { cat "$work/px.log"; fail "total not applied"; }
timeout 120 "$raw" "$addr" "$work/key" quota 16 64 96 "timeout 60 $vb quick" || {
    cat "$work/px.log"; fail "quotas"; }
grep -q "refused: over the session's quota" "$work/px.log" || fail "no log of the session quota's refusal"
grep -q "refused: over the device's total" "$work/px.log" || fail "no log of the total's refusal"
kill -0 "$px" || fail "the proxy died"
echo "quotas: refusals at the limits, proxy alive, another client served"

# images on the same account (the earlier sessions ended: their buffers are
# given back once the runtime frees them, which rawclient waits for)
timeout 120 "$raw" "$addr" "$work/key" imgquota 16 64 "timeout 60 $vb quick" || {
    cat "$work/px.log"; fail "image quotas"; }
grep -q "an image of [0-9]* bytes refused: over the session's quota" "$work/px.log" ||
    fail "no log of an image's refusal"
kill -0 "$px" || fail "the proxy died"
echo "image quotas: refused at the limit, given back, proxy alive, another client served"

# 400,000 cycles in one session: VmRSS growth under 8 MiB (checked by
# rawclient), except in a sanitizer build, whose quarantine keeps freed memory
# (the ID map's size is checked all the same)
asan=0
ldd "$top/mpigpu-proxy" 2>/dev/null | grep -q libasan && asan=1
timeout 300 "$raw" "$addr" "$work/key" cycles "$px" 400000 $((asan ? 0 : 8192)) || fail "cycles"
# every session so far ended, the cycles' one included: the largest map
started=$(grep -c "connected and authenticated" "$work/px.log")
wait_freed $((started - 1)) "the cycles' session was not freed"
slots=$(sed -n 's/.*its ID map had at most \([0-9]*\) slots.*/\1/p' "$work/px.log" | sort -n | tail -1)
echo "ID map of the cycles' session: at most $slots slots"
[ -n "$slots" ] && [ "$slots" -le 4096 ] || fail "the ID map grew to $slots slots"
stop_proxy "$px"

# Object counts: each kind refused at its limit (CL_OUT_OF_RESOURCES, a
# command's event on the event), a release makes room, sessions apart
MPIGPU_PROXY_MAX_CONTEXTS=3 MPIGPU_PROXY_MAX_QUEUES=2 MPIGPU_PROXY_MAX_MEM_OBJECTS=8 \
    MPIGPU_PROXY_MAX_PROGRAMS=3 MPIGPU_PROXY_MAX_KERNELS=5 MPIGPU_PROXY_MAX_EVENTS=50 \
    MPIGPU_PROXY_MAX_SAMPLERS=4 MPIGPU_PROXY_LOG_RATE=100 start_proxy px3
timeout 120 "$raw" "$PROXY_ADDR" "$work/key" objects || { cat "$work/px3.log"; fail "objects"; }
for k in CONTEXTS QUEUES MEM_OBJECTS PROGRAMS KERNELS EVENTS SAMPLERS; do
    grep -q "refused: the session holds [0-9]* (MPIGPU_PROXY_MAX_$k)" "$work/px3.log" ||
        { cat "$work/px3.log"; fail "no log of the refusal at MPIGPU_PROXY_MAX_$k"; }
done
kill -0 "$PROXY_PID" || fail "the proxy died"
stop_proxy "$PROXY_PID"
echo "object counts: refused at each kind's limit, room after a release, proxy alive"

# A proxy whose process runs out of address space before the quotas say no
# (RLIMIT_AS 3 GiB; PoCL's device reports far more): PoCL 3.1 would abort in
# its allocation, so the proxy must refuse the buffer itself, and live on.
# Not in a sanitizer build, whose shadow memory needs more address space.
if [ $asan -eq 1 ]; then
    echo "address-space limit: skipped (sanitizer build)"
else
    PROXY_WRAP="prlimit --as=$((3 << 30)) --" start_proxy px2
    timeout 120 "$raw" "$PROXY_ADDR" "$work/key" bigalloc 512 || { cat "$work/px2.log"; fail "bigalloc"; }
    kill -0 "$PROXY_PID" || fail "the proxy died of an allocation"
    grep -q "the process cannot allocate it now" "$work/px2.log" || fail "no log of the host-memory refusal"
    stop_proxy "$PROXY_PID"
    echo "out of address space: refused, proxy alive"
fi
echo "PASS"
