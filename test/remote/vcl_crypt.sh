#!/bin/bash
# Encryption of the TCP lanes (MPIGPU_VCL_ENCRYPT, on by default), through
# test/remote/relay, which records the traffic and alters it on command:
# - a known 1 MiB buffer written and one read back never show in the
#   capture; with encryption off on both sides they do (the check can fail);
# - a client and a proxy that disagree on encryption both say so and stop;
# - a flipped bit or a replayed record, on the command lane or a bulk stripe,
#   either way, ends that session: the side that got it logs why, the client
#   fails its call (no hang, no crash), and the proxy serves its other
#   clients on.
. "$(dirname "$0")/common.sh"
vb=$top/test/remote/vcl_basic
relay=$top/test/remote/relay
# the TCP lanes only (no shared memory, no one-copy lane), two bulk stripes
export MPIGPU_VCL_SHM=0 MPIGPU_VCL_STREAMS=2
marker_w=mpigpu-clear-text-marker-WRITE:0123456789
marker_r=mpigpu-clear-text-marker-READ:0123456789
relay_pids=""
trap 'for p in $relay_pids; do kill "$p" 2>/dev/null; done; cleanup' EXIT

# start_relay NAME [plain]: a relay to $PROXY_ADDR; sets RELAY_PID and
# RELAY_ADDR; capture $work/NAME.cap, commands through $work/NAME.ctl
start_relay() {
    "$relay" "$PROXY_ADDR" "$work/$1.cap" "$work/$1.ctl" ${2:-} >"$work/$1.out" 2>"$work/$1.err" &
    RELAY_PID=$!
    relay_pids="$relay_pids $RELAY_PID"
    RELAY_ADDR=$(wait_line "$work/$1.out" '^relay: listening on ') || fail "the relay did not start"
    RELAY_ADDR=${RELAY_ADDR#relay: listening on }
}
# has FILE TEXT: FILE (binary) contains TEXT
has() { grep -a -q -F -e "$2" "$1"; }

start_proxy px
px=$PROXY_PID px_addr=$PROXY_ADDR
grep -q "TCP lanes encrypted" "$work/px.log" || fail "the proxy does not say that it encrypts"
# a client straight to the proxy for the whole test: it must still be served
timeout 120 "$vb" idle >"$work/idle.out" 2>&1 &
idle=$!

# a capture of an encrypted session shows neither marker
start_relay enc
MPIGPU_VCL_SERVERS=$RELAY_ADDR timeout 120 "$vb" marker || fail "vcl_basic marker, encrypted"
kill "$RELAY_PID"
size=$(stat -c %s "$work/enc.cap")
[ "$size" -gt $((4 << 20)) ] || fail "only $size bytes went through the relay"
has "$work/enc.cap" "$marker_w" && fail "the written buffer crossed the wire in clear"
has "$work/enc.cap" "$marker_r" && fail "the buffer read crossed the wire in clear"
grep -q "connected and authenticated, encrypted (" "$work/px.log" || fail "no encrypted session logged"
echo "encrypted: $size bytes captured, no marker in clear"

# both sides plain: the same capture holds both markers
start_proxy plain --no-encrypt
pl=$PROXY_PID pl_addr=$PROXY_ADDR
grep -q "TCP lanes NOT encrypted" "$work/plain.log" || fail "--no-encrypt not logged"
start_relay clr plain
MPIGPU_VCL_ENCRYPT=0 MPIGPU_VCL_SERVERS=$RELAY_ADDR timeout 120 "$vb" marker ||
    fail "vcl_basic marker, plain"
kill "$RELAY_PID"
has "$work/clr.cap" "$marker_w" || fail "plain: the written marker is not in the capture"
has "$work/clr.cap" "$marker_r" || fail "plain: the marker read is not in the capture"
grep -q "connected and authenticated, plain (not encrypted)" "$work/plain.log" ||
    fail "no plain session logged"
echo "plain (MPIGPU_VCL_ENCRYPT=0, --no-encrypt): both markers in the capture"

# a client and a proxy that disagree
MPIGPU_VCL_SERVERS=$pl_addr timeout 60 "$vb" quick >"$work/m1.out" 2>&1 && fail "encrypting client ran on a plain proxy"
grep -q "the proxy runs with encryption off" "$work/m1.out" || { cat "$work/m1.out"; fail "no clear client message (client on, proxy off)"; }
grep -q "the client asks for encryption and this proxy runs with it off" "$work/plain.log" || fail "no proxy message (client on, proxy off)"
MPIGPU_VCL_ENCRYPT=0 MPIGPU_VCL_SERVERS=$px_addr timeout 60 "$vb" quick >"$work/m2.out" 2>&1 && fail "plain client ran on an encrypting proxy"
grep -q "the proxy encrypts its traffic and this client has MPIGPU_VCL_ENCRYPT=0" "$work/m2.out" || { cat "$work/m2.out"; fail "no clear client message (client off, proxy on)"; }
grep -q "the client has turned off encryption and this proxy encrypts" "$work/px.log" || fail "no proxy message (client off, proxy on)"
MPIGPU_VCL_ENCRYPT=maybe MPIGPU_VCL_SERVERS=$pl_addr timeout 60 "$vb" quick >"$work/m3.out" 2>&1 && fail "a malformed MPIGPU_VCL_ENCRYPT turned encryption off"
grep -q 'MPIGPU_VCL_ENCRYPT="maybe"' "$work/m3.out" || { cat "$work/m3.out"; fail "no message about the malformed setting"; }
stop_proxy "$pl"
PROXY_ADDR=$px_addr # the relays' target from here on
export MPIGPU_VCL_SERVERS=$px_addr
MPIGPU_VCL_ENCRYPT=maybe "$top/mpigpu-proxy" --listen 127.0.0.1:0 --key-file "$work/key" 2>"$work/m4.out" && fail "the proxy started with a malformed MPIGPU_VCL_ENCRYPT"
grep -q 'MPIGPU_VCL_ENCRYPT="maybe"' "$work/m4.out" || fail "the proxy did not name the malformed setting"
echo "mismatched settings: refused with a clear message on both sides"

# tamper N ACTION CONN DIR MODE: vcl_basic MODE (bigread or bigwrite)
# through relay tN, which then does ACTION (flip or replay) on connection CONN
# (0: command lane, 1 and 2: stripes) in direction DIR (0: to the proxy, 1:
# to the client); the client must fail within 15 s, and the side that
# received the record must say why.
tamper() {
    local n=$1 action=$2 conn=$3 dir=$4 mode=$5 c rc
    local bad0
    bad0=$(grep -c "frame failed its integrity check" "$work/px.log")
    start_relay "t$n"
    MPIGPU_VCL_SERVERS=$RELAY_ADDR "$vb" "$mode" 2>"$work/t$n.vb" &
    c=$!
    for _ in $(seq 200); do grep -q transferring "$work/t$n.vb" && break; sleep 0.1; done
    sleep 0.5
    echo "$action $conn $dir" >"$work/t$n.tmp"
    mv "$work/t$n.tmp" "$work/t$n.ctl"
    for _ in $(seq 150); do kill -0 $c 2>/dev/null || break; sleep 0.1; done
    if kill -0 $c 2>/dev/null; then
        kill -KILL $c
        fail "$action $conn $dir: the client still runs 15 s later"
    fi
    wait $c
    rc=$?
    kill "$RELAY_PID"
    grep -q "relay: ${action:0:4}" "$work/t$n.err" ||
        { cat "$work/t$n.vb" "$work/t$n.err"; fail "$action $conn $dir: the relay did not act"; }
    [ $rc -eq 3 ] || { cat "$work/t$n.vb"; fail "$action $conn $dir: client exit $rc, expected a transfer error"; }
    grep -q "connection to the proxy lost" "$work/t$n.vb" || fail "$action $conn $dir: no client message"
    if [ "$dir" = 0 ]; then
        for _ in $(seq 50); do
            [ "$(grep -c "frame failed its integrity check" "$work/px.log")" -gt "$bad0" ] && break
            sleep 0.1
        done
        [ "$(grep -c "frame failed its integrity check" "$work/px.log")" -gt "$bad0" ] ||
            fail "$action $conn $dir: the proxy did not log the bad frame"
    else
        grep -q "a frame from the proxy failed its integrity check" "$work/t$n.vb" ||
            { cat "$work/t$n.vb"; fail "$action $conn $dir: the client did not say why"; }
    fi
    echo "$action on connection $conn toward the $([ "$dir" = 0 ] && echo proxy || echo client): session ended, logged"
}
tamper 1 flip 0 0 bigread
tamper 2 replay 0 0 bigread
tamper 3 flip 1 0 bigwrite
tamper 4 replay 2 0 bigwrite
tamper 5 flip 0 1 bigread
tamper 6 replay 1 1 bigread

timeout 60 "$vb" quick >/dev/null || fail "the proxy does not serve a new client"
wait $idle || { cat "$work/idle.out"; fail "the other client lost its proxy"; }
echo "the proxy served a new client and kept its other client"
stop_proxy "$px"
echo PASS
