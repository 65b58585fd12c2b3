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
. "$(dirname "$0")/common.sh"
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
