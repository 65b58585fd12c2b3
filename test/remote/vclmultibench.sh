#!/bin/bash
# Benchmark (not in TESTS): three proxies on this host, one context over
# them (vcl_multi bench MIB, best of 3): a write of MIB from the host into a
# buffer of proxy 0, the broadcast of MIB to a buffer on each proxy
# (clEnqueueBroadcastWriteBufferMPIGPU), a copy between buffers of proxies
# 0 and 1 (proxy to proxy); and a plain TCP stream of MIB between two
# processes on the same loopback (the peer lane's endpoints), best of 3.
# Usage: vclmultibench.sh [MIB] [MODE]...   (default 256, all four)
# MODE: plain or encrypted (the proxies' and the client's TCP lanes), with
# _tcp: the client's own lanes over TCP too (MPIGPU_VCL_SHM=0, as a client on
# another host; else the shared-memory and one-copy lanes of this host).
# Prints CSV: mode,test,bytes,value,unit.
#
# vclmultibench.sh events [ROUNDS] [N]   (default 3 rounds of N = 200)
# The latency of a dependency between proxies (vcl_multi events N, median
# us): three proxies (encrypted, the default) serve every run; each round
# runs, in turn, the client's default lanes and TCP (MPIGPU_VCL_SHM=0), each
# with the default MPIGPU_VCL_PEER_EVENTS and with 0.  Prints CSV:
# lanes,peer_events,round,test,value,unit, and per run the stand-ins that a
# peer's notice set first and the notices that came after the client's.
# Under test/multinode/netbed.sh -n 4 (as root), the proxies run on nodes 2
# to 4 and the client on node1 (lanes "net": TCP between nodes), and
# VMB_NETEM, e.g. "delay 100us", adds netem on every node's switch port:
#   test/multinode/netbed.sh -n 4 -- env VMB_NETEM="delay 100us" \
#       test/remote/vclmultibench.sh events 3 200
. "$(dirname "$0")/common.sh"
if [ "${1:-}" = events ]; then
    rounds=${2:-3} n=${3:-200}
    # the sums of the proxies' "stand-ins set by a peer first N, after the client M"
    notices() {
        cat "$work"/ev*.log | sed -n 's/.*set by a peer first \([0-9]*\), after the client \([0-9]*\).*/\1 \2/p' |
            awk '{ f += $1; l += $2 } END { print f + 0, l + 0 }'
    }
    servers=
    pids=
    lanes_all="default tcp"
    on=() # the client's node under the network bed
    for i in 0 1 2; do
        unset MPIGPU_VCL_SERVERS
        if [ -n "${NETBED_EXEC:-}" ]; then
            k=$((i + 2)) # proxy i on node i + 2, 10.199.0.(i + 2); the client on node1
            PROXY_RSH="$NETBED_EXEC node$k" PROXY_LISTEN=10.199.0.$k:0 start_proxy "ev$i"
        else
            start_proxy "ev$i"
        fi
        servers="$servers${servers:+,}$PROXY_ADDR"
        pids="$pids $PROXY_PID"
    done
    if [ -n "${NETBED_EXEC:-}" ]; then
        lanes_all=net
        on=("$NETBED_EXEC" node1)
        # VMB_NETEM (e.g. "delay 100us"): netem on every node's switch port
        if [ -n "${VMB_NETEM:-}" ]; then
            for k in 1 2 3 4; do
                ip netns exec "$NETBED_SWITCH" tc qdisc add dev "v$k" root netem $VMB_NETEM ||
                    fail "netem $VMB_NETEM on v$k"
            done
        fi
    fi
    echo "lanes,peer_events,round,test,value,unit"
    for r in $(seq "$rounds"); do
        for lanes in $lanes_all; do
            for pe in 1 0; do
                read -r f0 l0 < <(notices)
                [ $lanes = tcp ] && shm=0 || shm=1
                MPIGPU_VCL_SHM=$shm MPIGPU_VCL_PEER_EVENTS=$pe MPIGPU_VCL_SERVERS=$servers \
                    timeout 600 "${on[@]}" "$top/test/remote/vcl_multi" events "$n" |
                    sed -n "s/^events,\([^,]*\),[0-9]*,/$lanes,$pe,$r,\1,/p"
                sleep 1 # the sessions log their counts as they end
                read -r f1 l1 < <(notices)
                echo "$lanes,$pe,$r,peer_first,$((f1 - f0)),stand-ins"
                echo "$lanes,$pe,$r,peer_after_client,$((l1 - l0)),notices"
            done
        done
    done
    for p in $pids; do stop_proxy "$p"; done
    exit 0
fi
mib=${1:-256}
shift
modes=${*:-plain plain_tcp encrypted encrypted_tcp}
tcp() { # a plain TCP stream of $mib MiB over loopback, MB/s, best of 3
    python3 - "$mib" <<'PY'
import os, socket, sys, time
n = int(sys.argv[1]) << 20
best = 1e30
for _ in range(3):
    ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
    if os.fork() == 0:  # the receiver: a process of its own, as a proxy is
        c, _ = ls.accept(); view = memoryview(bytearray(4 << 20)); got = 0
        while got < n:
            k = c.recv_into(view)
            if not k: break
            got += k
        c.sendall(b"k"); c.close(); os._exit(0)
    s = socket.create_connection(ls.getsockname())
    buf = memoryview(bytearray(4 << 20))
    t0 = time.perf_counter(); left = n
    while left:
        left -= s.send(buf[:min(left, len(buf))])
    s.recv(1); dt = time.perf_counter() - t0
    s.close(); ls.close(); os.wait(); best = min(best, dt)
print("%.1f" % (n / best / 1e6))
PY
}
echo "mode,test,bytes,value,unit"
echo "plain,tcp_stream,$((mib << 20)),$(tcp),MB/s"
for mode in $modes; do
    servers=
    pids=
    extra=
    case $mode in plain*) export MPIGPU_VCL_ENCRYPT=0; extra=--no-encrypt ;; esac
    case $mode in *_tcp) export MPIGPU_VCL_SHM=0 ;; esac
    for i in 0 1 2; do
        unset MPIGPU_VCL_SERVERS
        start_proxy "b$mode$i" $extra
        servers="$servers${servers:+,}$PROXY_ADDR"
        pids="$pids $PROXY_PID"
    done
    MPIGPU_VCL_SERVERS=$servers timeout 600 "$top/test/remote/vcl_multi" bench "$mib" |
        sed -n "s/^bench,/$mode,/p"
    for p in $pids; do stop_proxy "$p"; done
    unset MPIGPU_VCL_ENCRYPT MPIGPU_VCL_SHM
done
