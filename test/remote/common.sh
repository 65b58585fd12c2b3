# Sourced by the test/remote scripts: a private key, an ICD directory with
# the build tree's libmpigpu-vcl.so plus the system's PoCL, and a proxy on
# 127.0.0.1:0 whose port comes from its "listening on" line.
set -u
top=${abs_top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
work=$(mktemp -d "${TMPDIR:-/tmp}/mgrm-test.XXXXXX")
proxy_pids=""
cleanup() {
    for p in $proxy_pids; do kill -TERM "$p" 2>/dev/null; done
    for p in $proxy_pids; do wait "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
head -c 48 /dev/urandom | base64 > "$work/key"
chmod 600 "$work/key"
mkdir -p "$work/icd"
echo "$top/.libs/libmpigpu-vcl.so" > "$work/icd/mpigpu-vcl.icd"
for f in /etc/OpenCL/vendors/pocl.icd; do [ -f "$f" ] && cp "$f" "$work/icd/"; done
export OCL_ICD_VENDORS="$work/icd"
export MPIGPU_VCL_KEY_FILE="$work/key"

fail() { echo "FAIL: $*"; exit 1; }

# wait_line FILE PATTERN [TIMEOUT [PID]]: waits until FILE has a line that
# matches PATTERN (grep's basic regular expression) and prints the first such
# line; returns 1 when there is none after TIMEOUT seconds (default 10), or,
# with PID, once process PID has ended without writing one.
wait_line() {
    local file=$1 pattern=$2 polls=$((${3:-10} * 10)) pid=${4:-}
    for _ in $(seq "$polls"); do
        grep -m 1 -e "$pattern" "$file" 2>/dev/null && return 0
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            grep -m 1 -e "$pattern" "$file" 2>/dev/null # written just before it ended
            return
        fi
        sleep 0.1
    done
    return 1
}

# start_proxy NAME [ARGS...]: starts $top/mpigpu-proxy with ARGS, listening on
# $PROXY_LISTEN (default 127.0.0.1:0); sets PROXY_PID and PROXY_ADDR (from its
# "listening on" line, within 10 s) and exports MPIGPU_VCL_SERVERS; log in
# $work/NAME.log.  Launchers, both empty by default:
# - PROXY_WRAP: a command that execs the proxy (e.g. setpriv, prlimit --);
# - PROXY_RSH: a command that runs one shell line elsewhere, as "ssh HOST"
#   does (e.g. "$NETBED_EXEC node2" under test/multinode/netbed.sh): the
#   line execs the proxy there, so that PROXY_PID is the proxy; 15 s for
#   the "listening on" line.
start_proxy() {
    local name=$1 line wait=10; shift
    local log=$work/$name.log
    local cmd=("$top/mpigpu-proxy" --listen "${PROXY_LISTEN:-127.0.0.1:0}" --key-file "$work/key" "$@")
    if [ -n "${PROXY_RSH:-}" ]; then
        wait=15
        $PROXY_RSH "exec $(printf '%q ' ${PROXY_WRAP:-} "${cmd[@]}")" </dev/null 2>"$log" &
    else
        ${PROXY_WRAP:-} "${cmd[@]}" 2>"$log" &
    fi
    PROXY_PID=$!
    proxy_pids="$proxy_pids $PROXY_PID"
    if ! line=$(wait_line "$log" '^mpigpu-proxy: listening on ' $wait "$PROXY_PID"); then
        cat "$log"
        kill -0 "$PROXY_PID" 2>/dev/null || fail "proxy $name did not start"
        fail "proxy $name did not print its address in $wait s"
    fi
    PROXY_ADDR=${line#mpigpu-proxy: listening on }
    export MPIGPU_VCL_SERVERS=$PROXY_ADDR
}

# stop_proxy PID: SIGTERM, and the proxy must exit 0
stop_proxy() {
    kill -TERM "$1"
    wait "$1"
    local rc=$?
    proxy_pids=$(echo "$proxy_pids" | sed "s/ $1\b//")
    [ $rc -eq 0 ] || fail "proxy exited with $rc after SIGTERM"
}

# sessions_freed: how many sessions the proxy (log $work/px.log) has freed.
sessions_freed() { grep -c "all its objects released" "$work/px.log"; }

# wait_freed N0 WHY: waits up to 10 s until the proxy has freed more than N0
# sessions; fails with WHY otherwise.
wait_freed() {
    for _ in $(seq 100); do
        [ "$(sessions_freed)" -gt "$1" ] && return
        sleep 0.1
    done
    fail "$2"
}

# kill_mid_write SECONDS: start vcl_basic's 64 MiB write ($vb bigwrite), kill
# it SECONDS after it reports transferring, and fail unless the proxy (log
# $work/px.log) frees its session within 10 s.
kill_mid_write() {
    "$vb" bigwrite 2>"$work/bw.out" &
    local bw=$! n0
    for _ in $(seq 100); do grep -q transferring "$work/bw.out" && break; sleep 0.1; done
    sleep "$1"
    n0=$(sessions_freed)
    kill -KILL $bw
    wait $bw 2>/dev/null
    wait_freed "$n0" "session of the killed client not freed"
}
