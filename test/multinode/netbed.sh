#!/bin/bash
# netbed.sh: several "nodes" on one machine, for tests between nodes
# (test/multinode/README.md).
#
#   netbed.sh [-n NODES] [--] COMMAND [ARGS...]
#
# Makes NODES nodes (default 2), named node1 ... nodeN, runs COMMAND in the
# calling shell's namespaces with the variables below set, then tears every
# node down, whatever COMMAND did (an EXIT trap; also on INT and TERM).  The
# script's status is COMMAND's.  Each node has
#   - its own network namespace, with lo and eth0 = 10.199.0.K/24 (K the
#     node's number), eth0 being one end of a veth pair whose other end,
#     vK, is a port of the bridge br0 in a "switch" namespace of its own;
#   - its own UTS namespace: hostname nodeK;
#   - its own mount namespace with a private tmpfs on /dev/shm, so that POSIX
#     shared memory objects of one node are not seen by another (as on a
#     cluster).  Processes and the rest of the file system are shared.
# The calling shell's network is not touched.
#
# Exported to COMMAND:
#   NETBED_DIR     the bed's directory (namespace files, logs)
#   NETBED_NODES   the number of nodes
#   NETBED_EXEC    test/multinode/nsexec: "$NETBED_EXEC nodeK CMD..." runs
#                  CMD on node K; it is also hydra's launcher
#   NETBED_MPIEXEC an mpiexec command line that runs on node1 and starts
#                  ranks on the nodes through NETBED_EXEC; append -hosts and
#                  the rest ("$NETBED_MPIEXEC -hosts node1:2,node2:2 -n 4 ...")
#   NETBED_SWITCH  the switch namespace's name (ip -n "$NETBED_SWITCH" ...):
#                  faults go on its ports vK (tc qdisc ... dev vK netem ...)
#
# Exit status 77 (automake's SKIP), with a message, where namespaces cannot
# be made: not root, no CAP_SYS_ADMIN/CAP_NET_ADMIN, no veth or bridge
# support.  NETBED_DEBUG=1 traces the set-up.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
nodes=2
while [ $# -gt 0 ]; do
    case $1 in
        -n) nodes=$2; shift 2 ;;
        --) shift; break ;;
        -*) echo "netbed: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: netbed.sh [-n NODES] [--] COMMAND [ARGS...]" >&2; exit 2; }
case $nodes in
    [1-9] | [1-9][0-9]) ;;
    *) echo "netbed: -n takes 1 to 99 nodes, not $nodes" >&2; exit 2 ;;
esac
[ "${NETBED_DEBUG:-0}" = 1 ] && set -x

skip() {
    echo "netbed: SKIP: $*" >&2
    exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (network, UTS and mount namespaces)"
for t in ip unshare nsenter mount umount; do
    command -v "$t" >/dev/null || skip "no $t command"
done

# A prefix of our own, so that several beds (and other tests) never meet.
pfx=mgnb$$
dir=${TMPDIR:-/tmp}/$pfx
made=() # what teardown undoes, in reverse

teardown() {
    local st=$? i p
    trap - EXIT INT TERM
    set +e
    # Processes left on the nodes (a hung rank, a proxy): ours, by pid.
    for ((i = 1; i <= nodes; i++)); do
        for p in $(ip netns pids "${pfx}n$i" 2>/dev/null); do
            kill -KILL "$p" 2>/dev/null
        done
    done
    for ((i = ${#made[@]} - 1; i >= 0; i--)); do
        eval "${made[$i]}" >/dev/null 2>&1
    done
    exit "$st"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$dir" || skip "cannot make $dir"
made+=("rm -rf '$dir'")
ip netns add "${pfx}sw" 2>"$dir/err" || skip "ip netns add failed: $(cat "$dir/err")"
made+=("ip netns del ${pfx}sw")
ip -n "${pfx}sw" link add br0 type bridge 2>"$dir/err" || skip "no bridge: $(cat "$dir/err")"
ip -n "${pfx}sw" link set br0 up
for ((k = 1; k <= nodes; k++)); do
    ns=${pfx}n$k
    ip netns add "$ns" || skip "ip netns add $ns failed"
    made+=("ip netns del $ns")
    ip -n "${pfx}sw" link add "v$k" type veth peer name eth0 netns "$ns" 2>"$dir/err" ||
        skip "no veth pair: $(cat "$dir/err")"
    ip -n "${pfx}sw" link set "v$k" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "10.199.0.$k/24" dev eth0
    ip -n "$ns" link set eth0 up
    # The node's holder: a process that sits in the node's network namespace
    # and in UTS and mount namespaces of its own (hostname, /dev/shm) for the
    # bed's life; nsexec enters a node through /proc/HOLDER/ns/*, which every
    # node sees, unlike files under /run (each node's mounts are private).
    rm -f "$dir/ready$k"
    nsenter --net="/run/netns/$ns" unshare --uts --ipc --mount --propagation private sh -c \
        "hostname node$k && mount -t tmpfs -o mode=1777,size=1g tmpfs /dev/shm && : >'$dir/ready$k' && exec sleep 2147483647" \
        </dev/null >/dev/null 2>"$dir/err$k" &
    echo $! >"$dir/node$k.pid"
    disown $! # teardown kills it; no "Killed" line from this shell
    for _ in $(seq 100); do
        [ -e "$dir/ready$k" ] && break
        kill -0 "$(cat "$dir/node$k.pid")" 2>/dev/null || skip "unshare --uts --mount failed: $(cat "$dir/err$k")"
        sleep 0.05
    done
    [ -e "$dir/ready$k" ] || skip "node$k's namespaces did not come up"
done

# Where ping exists, wait until node1 reaches every other node (a bridge
# without STP forwards at once; this only guards against a slow port).
if command -v ping >/dev/null; then
    for ((k = 2; k <= nodes; k++)); do
        ok=0
        for _ in $(seq 50); do
            if ip netns exec "${pfx}n1" ping -c 1 -W 1 "10.199.0.$k" >/dev/null 2>&1; then ok=1; break; fi
            sleep 0.1
        done
        [ $ok = 1 ] || { echo "netbed: node1 cannot reach node$k" >&2; exit 1; }
    done
fi

export NETBED_DIR=$dir NETBED_NODES=$nodes NETBED_EXEC=$here/nsexec NETBED_SWITCH=${pfx}sw
# mpiexec runs on node1; its proxies reach it at node1's eth0 address (-iface:
# no node name resolves here) and are started by nsexec instead of ssh.
export NETBED_MPIEXEC="$NETBED_EXEC node1 ${MPIEXEC:-mpiexec} -iface eth0 -launcher rsh -launcher-exec $NETBED_EXEC"
"$@"
