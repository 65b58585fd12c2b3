#!/bin/bash
# The striped TCP bulk lane (MPIGPU_VCL_SHM=0, so that a client on this host
# uses TCP alone): vcl_basic's checks (data compared byte for byte, transfers
# whose size is no multiple of the chunk, reads and writes at odd offsets,
# rects, sub-buffers) and vclbench (each size read back and compared) with 1,
# 3 and 4 stripes; the proxy's cap (--streams); a hostile client's stripes
# (rawclient stripes); FINISH inline with stripes too, and every completion
# by FINISH (MPIGPU_PROXY_TEST_DROP_CALLBACKS); a client killed
# mid-write; one stripe of a client closed mid-read (ss -K; skipped where the
# kernel cannot): the client gets an error within seconds and the proxy frees
# the session.
. "$(dirname "$0")/common.sh"
vb=$top/test/remote/vcl_basic
export MPIGPU_VCL_SHM=0
start_proxy px
px=$PROXY_PID
for n in 1 3 4; do
    MPIGPU_VCL_STREAMS=$n timeout 300 "$vb" >"$work/vb$n.out" 2>&1 ||
        { cat "$work/vb$n.out"; fail "vcl_basic with $n stripe(s)"; }
    echo "vcl_basic, $n stripe(s): passed"
done
[ "$(grep -c "bulk lane of 3 TCP stripes" "$work/px.log")" = 1 ] || fail "no session of 3 stripes"
[ "$(grep -c "bulk lane of 4 TCP stripes" "$work/px.log")" = 1 ] || fail "no session of 4 stripes"
[ "$(grep -c "bulk lane of" "$work/px.log")" = 2 ] || fail "a session of 1 stripe was striped"
# FINISH still runs on the proxy's session thread (inline) with stripes: a
# striped read's job settles before its gate and end chunk (job_settle)
for _ in $(seq 50); do [ "$(grep -c ": FINISH" "$work/px.log")" -ge 3 ] && break; sleep 0.1; done
grep ": FINISH" "$work/px.log" | head -n 3 | sed 's/.*: FINISH/vcl_basic sessions: FINISH/'
[ "$(grep ": FINISH" "$work/px.log" | head -n 3 | grep -c ": FINISH [1-9][0-9]* inline")" = 3 ] ||
    fail "a vcl_basic session (1, 3 or 4 stripes) ran no FINISH inline"
MPIGPU_VCL_STREAMS=99 timeout 60 "$vb" quick >"$work/bad.out" 2>&1 || fail "MPIGPU_VCL_STREAMS=99"
grep -q "MPIGPU_VCL_STREAMS=99 is not a number from 1 to 16" "$work/bad.out" ||
    fail "no warning about MPIGPU_VCL_STREAMS=99"

# a client killed in the middle of a 64 MiB write over 4 stripes
MPIGPU_VCL_STREAMS=4 kill_mid_write 1
MPIGPU_VCL_STREAMS=4 timeout 60 "$vb" quick >/dev/null || fail "proxy unusable after a client died"
echo "client killed mid-write: session freed, proxy still serving"

# one stripe closed under a 64 MiB read loop
if ss -h 2>&1 | grep -q -- --kill; then
    port=${PROXY_ADDR##*:}
    MPIGPU_VCL_STREAMS=4 "$vb" bigread 2>"$work/br.out" &
    br=$!
    for _ in $(seq 100); do grep -q transferring "$work/br.out" && break; sleep 0.1; done
    sleep 1
    # the command lane's port is in the proxy's log; the stripe is another
    cmd=$(sed -n 's/.*session [0-9]*: client 127.0.0.1:\([0-9]*\) connected.*/\1/p' "$work/px.log" |
        tail -n 1)
    sport=$(ss -tnH state established "dport = :$port" | awk '{ sub(/.*:/, "", $3); print $3 }' |
        grep -vx "$cmd" | sort -n | tail -n 1)
    n0=$(sessions_freed)
    t0=$(date +%s.%N)
    if [ -n "$sport" ] && ss -tnK state established "( dport = :$port and sport = :$sport )" \
        >/dev/null 2>&1; then
        for _ in $(seq 150); do kill -0 $br 2>/dev/null || break; sleep 0.1; done
        if kill -0 $br 2>/dev/null; then kill -KILL $br; fail "client still running 15 s after its stripe died"; fi
        wait $br
        rc=$?
        t1=$(date +%s.%N)
        [ $rc -eq 3 ] || { cat "$work/br.out"; fail "client exit $rc, expected a transfer error"; }
        grep -q "connection to the proxy lost" "$work/br.out" || fail "no message about the lost lane"
        wait_freed "$n0" "session of the broken stripe not freed"
        echo "one stripe closed mid-read: client error after $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s, session freed"
    else
        kill -KILL $br
        wait $br 2>/dev/null
        echo "one stripe closed mid-read: skipped (ss -K not permitted here)"
    fi
    MPIGPU_VCL_STREAMS=4 timeout 60 "$vb" quick >/dev/null || fail "proxy unusable after a broken stripe"
fi
stop_proxy "$px"

# the proxy's cap, and a hostile client's stripes
start_proxy cap --streams 3
MPIGPU_VCL_STREAMS=4 timeout 60 "$vb" quick >/dev/null || fail "vcl_basic quick with the cap"
grep -q "bulk lane of 3 TCP stripes" "$work/cap.log" || fail "4 stripes asked, not capped at 3"
timeout 120 "$top/test/remote/rawclient" "$PROXY_ADDR" "$work/key" stripes 3 || fail "rawclient stripes"
grep -q "stripe 3 not granted or already joined" "$work/cap.log" || fail "no log of a refused stripe"
grep -q "at offset 12345 .* was due" "$work/cap.log" || fail "no log of a misplaced chunk"
MPIGPU_VCL_STREAMS=4 timeout 60 "$vb" quick >/dev/null || fail "proxy unusable after rawclient"
stop_proxy "$PROXY_PID"

# every completion by FINISH (no callbacks): a read's failure then reaches the
# client on the command lane before its end chunk on a stripe (dropped)
MPIGPU_PROXY_TEST_DROP_CALLBACKS=1 start_proxy pxdrop
MPIGPU_VCL_STREAMS=4 timeout 300 "$vb" >"$work/vbdrop.out" 2>&1 ||
    { cat "$work/vbdrop.out"; fail "vcl_basic, 4 stripes, no completion callbacks"; }
stop_proxy "$PROXY_PID"
grep -q "bulk lane of 4 TCP stripes" "$work/pxdrop.log" || fail "drop proxy: no session of 4 stripes"
grep "FINISH" "$work/pxdrop.log" | sed 's/.*: FINISH/vcl_basic, 4 stripes, no callbacks: FINISH/'
grep -q "FINISH .* 0 by callback" "$work/pxdrop.log" || fail "a callback sent a completion"

# vclbench: every size read back and compared, with 1, 3 and 4 stripes
for n in 1 3 4; do
    MPIGPU_VCL_STREAMS=$n timeout 600 bash "$(dirname "$0")/vclbench.sh" virtual -n 2 -l 100 -m 1:16 \
        >"$work/bench$n.out" 2>&1 || { cat "$work/bench$n.out"; fail "vclbench with $n stripe(s)"; }
    grep "^write\|^read" "$work/bench$n.out" | sed "s/^/vclbench, $n stripe(s): /"
done
echo "PASS"
