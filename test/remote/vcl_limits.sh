#!/bin/bash
# Connection limits of mpigpu-proxy (issue 27), on loopback:
# - a flood of handshakes that trickle a byte every 500 ms, from two
#   addresses (127.0.0.2, 127.0.0.3), against a proxy capped at 8 pending
#   connections per address and 12 in all, with a 2 s handshake deadline:
#   the connections over the caps are refused at once, none outlives the
#   deadline however it trickles, the proxy's threads stay bounded, and a
#   client from 127.0.0.1 is served meanwhile (the time is printed, not
#   judged); the refusal log stays within MPIGPU_PROXY_LOG_RATE=5 lines a
#   second and says how many it suppressed;
# - at the descriptor limit (prlimit --nofile): the accept loop does not
#   spin (the proxy's CPU time over 2 s: under a fifth of a second), a new
#   client is answered (refused
#   or served, never left hanging), and served once descriptors are free.
. "$(dirname "$0")/common.sh"
raw=$top/test/remote/rawclient
vb=$top/test/remote/vcl_basic

# utime + stime of process $1, in clock ticks
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
threads() { awk '/^Threads:/ { print $2 }' "/proc/$1/status"; }

t_start=$(date +%s)
MPIGPU_PROXY_HANDSHAKE_TIMEOUT=2 MPIGPU_PROXY_PENDING_PER_PEER=8 MPIGPU_PROXY_PENDING_MAX=12 \
    MPIGPU_PROXY_LOG_RATE=5 start_proxy px
px=$PROXY_PID addr=$PROXY_ADDR
th0=$(threads "$px")
timeout 60 "$raw" "$addr" "$work/key" flood 127.0.0.2 60 500 6000 >"$work/f2.out" &
f2=$!
timeout 60 "$raw" "$addr" "$work/key" flood 127.0.0.3 60 500 6000 >"$work/f3.out" &
f3=$!
sleep 1
th1=$(threads "$px")
timeout 30 "$raw" "$addr" "$work/key" probe >"$work/probe.out" || {
    cat "$work/probe.out" "$work/px.log"; fail "a client was not served during the flood"; }
cat "$work/probe.out"
wait $f2 $f3
cat "$work/f2.out" "$work/f3.out"
echo "proxy threads: $th0 before the flood, $th1 during it"
[ "$th1" -le $((th0 + 12 + 4)) ] || fail "$th1 threads during the flood (caps: 12 pending)"
for f in f2 f3; do
    read -r early open < <(sed -n 's/.* \([0-9]*\) refused at once.* \([0-9]*\) open after.*/\1 \2/p' "$work/$f.out")
    [ -n "$early" ] || fail "no flood report in $f.out"
    [ "$open" -eq 0 ] || fail "$f: $open connections outlived the 2 s handshake deadline"
done
grep -q "handshake not done within 2 s" "$work/px.log" || fail "no log of the deadline"
grep -q "MPIGPU_PROXY_PENDING_PER_PEER" "$work/px.log" || fail "no log of the per-address cap"
stop_proxy "$px"
elapsed=$(($(date +%s) - t_start))
lines=$(grep -c "refused\|dropped for a peer" "$work/px.log")
echo "refusal log: $lines lines in about $elapsed s"
[ "$lines" -le $((5 * (elapsed + 2))) ] || fail "$lines refusal lines in $elapsed s (rate 5 a second)"
grep -q "suppressed [0-9]* log messages" "$work/px.log" || fail "no \"suppressed\" summary"
echo "slow-handshake flood: capped, dropped at the deadline, a client served, log rate-limited"

# Out of descriptors: a proxy with few, and connections that hold them
# (deadline 6 s, so they hold the descriptors for the 4 s of the flood).
MPIGPU_PROXY_HANDSHAKE_TIMEOUT=6 MPIGPU_PROXY_PENDING_PER_PEER=1000 MPIGPU_PROXY_PENDING_MAX=1000 \
    PROXY_WRAP="prlimit --nofile=64 --" start_proxy px2
px2=$PROXY_PID addr=$PROXY_ADDR
used=$(ls "/proc/$px2/fd" | wc -l)
n=$((64 - used + 20))
echo "descriptor limit 64, $used in use at start: $n connections"
timeout 60 "$raw" "$addr" "$work/key" flood 127.0.0.2 "$n" 0 4000 >"$work/f4.out" &
f4=$!
sleep 1
c0=$(cpu_ticks "$px2")
sleep 2
c1=$(cpu_ticks "$px2")
timeout 30 "$raw" "$addr" "$work/key" probe >"$work/probe2.out"
rc=$?
cat "$work/probe2.out"
[ $rc -eq 0 ] || [ $rc -eq 3 ] || fail "a client at the descriptor limit: exit $rc (left hanging?)"
wait $f4
cat "$work/f4.out"
echo "proxy CPU time over 2 s at the descriptor limit: $((c1 - c0)) ticks of $(getconf CLK_TCK) a second"
# An idle proxy takes next to nothing; the accept loop of before spun on
# EMFILE at 52 ticks in these 2 s (26% of a core) on the 2-core test machine.
[ $((c1 - c0)) -lt $(($(getconf CLK_TCK) / 5)) ] || fail "the accept loop spins: $((c1 - c0)) ticks in 2 s"
grep -q "out of file descriptors" "$work/px2.log" || fail "no refusal at the descriptor limit"
served=0
for _ in $(seq 50); do
    timeout 30 "$raw" "$addr" "$work/key" probe >"$work/probe3.out" && { served=1; break; }
    sleep 0.2
done
[ $served -eq 1 ] || { cat "$work/probe3.out" "$work/px2.log"; fail "no client served once descriptors were free"; }
cat "$work/probe3.out"
MPIGPU_VCL_SERVERS=$addr timeout 60 "$vb" quick || fail "vcl_basic after the descriptor limit"
stop_proxy "$px2"
echo "descriptor limit: no spin, clients refused cleanly, then served"
echo "PASS"
