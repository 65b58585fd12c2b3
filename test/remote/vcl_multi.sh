#!/bin/bash
# One context over the devices of three proxies on loopback, each serving
# PoCL (vcl_multi.c): a pipeline of kernels across them gated by events of
# other proxies and a user event, checked against the host; a 32 MiB copy
# from one proxy's buffer into another's, a migration and a rect copy, with
# byte counters that prove the bytes went proxy to proxy (each proxy's
# "peer lane moved" line; the client's MPIGPU_VCL_STATS total far below the
# data); a broadcast of host data to a buffer on each proxy that the client
# sends once; bad wait lists; a proxy killed under a live context.  Encrypted
# (the default), where an event's proxy also tells the proxies whose
# commands wait for it itself (their "stand-ins set by a peer" counts), and
# plain (MPIGPU_VCL_ENCRYPT=0, --no-encrypt) with only the client passing
# completions on (MPIGPU_VCL_PEER_EVENTS=0: no notices between proxies).
. "$(dirname "$0")/common.sh"
vm="$top/test/remote/vcl_multi"
stat() { sed -n "s/^mpigpu-vcl: messages=.* $1=\([0-9]*\).*/\1/p" "$2" | tail -n 1; }
# peer NAME IN|OUT: the bytes the proxy's sessions moved in or out on the peer lane
peer() {
    sed -n 's/.*peer lane moved \([0-9]*\) bytes in, \([0-9]*\) out.*/\1 \2/p' "$work/$1.log" |
        awk -v w="$2" '{ s += (w == "in" ? $1 : $2) } END { print s + 0 }'
}
# notices NAME: event notices the proxy's sessions got from peers (first or late)
notices() {
    sed -n 's/.*stand-ins set by a peer first \([0-9]*\), after the client \([0-9]*\).*/\1 \2/p' \
        "$work/$1.log" | awk '{ s += $1 + $2 } END { print s + 0 }'
}
three() { # three proxies, NAME-0..2, ARGS for each; MPIGPU_VCL_SERVERS names them
    local servers= pids=
    for i in 0 1 2; do
        unset MPIGPU_VCL_SERVERS # a proxy would serve the others' devices too
        start_proxy "$1-$i" "${@:2}"
        servers="$servers${servers:+,}$PROXY_ADDR"
        pids="$pids $PROXY_PID"
    done
    export MPIGPU_VCL_SERVERS=$servers
    PIDS=$pids
}
stop_three() { for p in $PIDS; do stop_proxy "$p"; done; }
# wait_log NAME TEXT: the proxy's log has TEXT within 10 s
wait_log() { wait_line "$work/$1.log" "$2" >/dev/null; }

for crypt in on off; do
    if [ $crypt = off ]; then
        export MPIGPU_VCL_ENCRYPT=0 MPIGPU_VCL_PEER_EVENTS=0
        three "px$crypt" --no-encrypt
    else
        three "px$crypt"
    fi
    timeout 60 "$vm" pipeline || fail "pipeline ($crypt)"
    timeout 60 "$vm" pipeline ooo || fail "pipeline, out-of-order queues ($crypt)"
    MPIGPU_VCL_STATS=1 timeout 120 "$vm" copy 32 2>"$work/copy.err" ||
        { cat "$work/copy.err"; fail "copy ($crypt)"; }
    out=$(stat bytes_out "$work/copy.err") in=$(stat bytes_in "$work/copy.err")
    [ -n "$out" ] && [ -n "$in" ] || fail "no MPIGPU_VCL_STATS line"
    [ $((out + in)) -lt $((4 << 20)) ] ||
        fail "the client carried $out bytes out and $in in for a 32 MiB copy ($crypt)"
    MPIGPU_VCL_STATS=1 timeout 60 "$vm" bcast 16 2>"$work/bcast.err" ||
        { cat "$work/bcast.err"; fail "broadcast ($crypt)"; }
    sent=$(($(stat bytes_out "$work/bcast.err") + $(stat cma_out "$work/bcast.err")))
    [ "$sent" -ge $((16 << 20)) ] && [ "$sent" -lt $((24 << 20)) ] ||
        fail "a 16 MiB broadcast to 3 proxies: the client sent $sent bytes, not the data once"
    echo "broadcast ($crypt): the client sent $sent bytes for 16 MiB to 3 proxies"
    timeout 60 "$vm" errors || fail "errors ($crypt)"
    stop_three # the sessions' counters are logged at their end
    pin=$(($(peer "px$crypt-1" in) + $(peer "px$crypt-2" in)))
    pout=$(($(peer "px$crypt-0" out) + $(peer "px$crypt-2" out)))
    echo "copy ($crypt): client carried $out bytes out, $in in; proxies' peer lanes moved $pin in, $pout out"
    [ "$pin" -ge $((32 << 20)) ] && [ "$pout" -ge $((32 << 20)) ] ||
        fail "the proxies moved too little on their peer lanes ($crypt): in $pin, out $pout"
    nn=$(($(notices "px$crypt-0") + $(notices "px$crypt-1") + $(notices "px$crypt-2")))
    echo "event notices between proxies ($crypt): $nn"
    if [ $crypt = on ]; then
        [ "$nn" -ge 3 ] || fail "7 dependencies between proxies, only $nn notices (some may come after a session ended)"
    else
        [ "$nn" -eq 0 ] || fail "MPIGPU_VCL_PEER_EVENTS=0, yet $nn notices between proxies"
    fi
    unset MPIGPU_VCL_ENCRYPT MPIGPU_VCL_PEER_EVENTS
done

# a proxy killed under a live context
three pxdead
last=${PIDS##* }
timeout 60 "$vm" dead "$last" || fail "dead proxy"
proxy_pids=$(echo "$proxy_pids" | sed "s/ $last\b//")
wait "$last" 2>/dev/null
PIDS=${PIDS% *}
stop_three
echo "vcl_multi: passed"
