#!/bin/bash
# The shared-memory bulk lane (client and proxy on one host): on by default,
# off with MPIGPU_VCL_SHM=0 or the proxy's --no-shm (vcl_basic passes each
# way), and no /dev/shm/mpigpu-* segment left behind by a client killed
# mid-write or a proxy killed mid-read.
. "$(dirname "$0")/common.sh"
vb="$top/test/remote/vcl_basic"
segs() { ls /dev/shm 2>/dev/null | grep '^mpigpu-' | sort; }
shmlines() { grep -c "shared-memory bulk lane" "$work/$1.log"; }
before=$(segs)
# new_segs: segments that were not there when the test started
new_segs() { comm -13 <(echo "$before") <(segs) | grep . ; }
# leftover: new segments still there 5 s later (other tests running beside
# this one, e.g. under make -j, have their own for a moment at session start)
leftover() {
    local first
    first=$(new_segs)
    for _ in $(seq 50); do [ -z "$(comm -12 <(echo "$first") <(new_segs))" ] && return; sleep 0.1; done
    comm -12 <(echo "$first") <(new_segs) | grep .
}

start_proxy px
timeout 300 "$vb" || fail "vcl_basic over shm"
[ "$(shmlines px)" -ge 1 ] || fail "the session did not use the shm lane"
n=$(shmlines px)
MPIGPU_VCL_SHM=0 timeout 300 "$vb" || fail "vcl_basic with MPIGPU_VCL_SHM=0"
[ "$(shmlines px)" -eq "$n" ] || fail "MPIGPU_VCL_SHM=0 still used the shm lane"
echo "vcl_basic: passed over shm and with MPIGPU_VCL_SHM=0"

# a client killed in the middle of a 64 MiB write
kill_mid_write 0.5
left=$(leftover)
[ -z "$left" ] || fail "segments left after a client was killed: $left"
timeout 60 "$vb" quick >/dev/null || fail "proxy unusable after a client died mid-write"
echo "client killed mid-write: session freed, no segment left"
stop_proxy "$PROXY_PID"

# --no-shm
start_proxy nos --no-shm
timeout 300 "$vb" quick || fail "vcl_basic quick with --no-shm"
[ "$(shmlines nos)" -eq 0 ] || fail "--no-shm still used the shm lane"
stop_proxy "$PROXY_PID"
echo "--no-shm: stream lane, passed"

# a proxy killed in the middle of a read
start_proxy px2
px2=$PROXY_PID
"$vb" bigread 2>"$work/br.out" &
br=$!
for _ in $(seq 100); do grep -q transferring "$work/br.out" && break; sleep 0.1; done
sleep 0.5
kill -KILL "$px2"
for _ in $(seq 150); do kill -0 $br 2>/dev/null || break; sleep 0.1; done
if kill -0 $br 2>/dev/null; then kill -KILL $br; fail "client still running 15 s after the proxy died"; fi
wait $br
[ $? -eq 3 ] || fail "client did not get a transfer error"
proxy_pids=$(echo "$proxy_pids" | sed "s/ $px2\b//")
[ "$(shmlines px2)" -ge 1 ] || fail "the bigread session did not use the shm lane"
left=$(leftover)
[ -z "$left" ] || fail "segments left after the proxy was killed: $left"
echo "proxy killed mid-read: client error, no segment left"
echo "PASS"
