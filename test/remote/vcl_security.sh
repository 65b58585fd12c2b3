#!/bin/bash
# Security and robustness of the remote path: wrong key, foreign IDs,
# malformed messages, a client killed mid-write, 16 clients at once, and a
# proxy killed mid-read.
. "$(dirname "$0")/common.sh"
vb=$top/test/remote/vcl_basic
raw=$top/test/remote/rawclient
start_proxy px
px=$PROXY_PID addr=$PROXY_ADDR
# a connection that never says HELLO: dropped after the 10 s handshake limit
exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}" || fail "cannot open a raw connection"
stall_t0=$(date +%s)
# and an idle client, which must still be served after 12 s of silence
timeout 120 "$vb" idle >"$work/idle.out" 2>&1 &
idle=$!

# wrong key: refused before any OpenCL call, both sides say so
head -c 48 /dev/urandom | base64 > "$work/wrong"
chmod 600 "$work/wrong"
MPIGPU_VCL_KEY_FILE=$work/wrong timeout 60 "$vb" quick >"$work/wrong.out" 2>&1 &&
    fail "a client with a wrong key ran"
grep -q "did not prove the shared key" "$work/wrong.out" || { cat "$work/wrong.out"; fail "no clear client error"; }
grep -q "no \"mpigpu virtual\" platform" "$work/wrong.out" || fail "the platform was listed"
timeout 60 "$raw" "$addr" "$work/wrong" auth || fail "rawclient with a wrong key"
grep -q "refused: authentication failed" "$work/px.log" || fail "the proxy did not log the refusal"
cp "$work/key" "$work/open" && chmod 644 "$work/open"
MPIGPU_VCL_KEY_FILE=$work/open timeout 60 "$vb" quick >"$work/open.out" 2>&1 && fail "open key used"
grep -q "too open" "$work/open.out" || fail "no message about key permissions"
echo "wrong key: refused"

timeout 60 "$raw" "$addr" "$work/key" foreign || fail "foreign IDs"
timeout 60 "$raw" "$addr" "$work/key" malformed || fail "malformed messages"
grep -q "malformed request" "$work/px.log" || fail "malformed request not logged"
grep -q "unknown op 999" "$work/px.log" || fail "unknown op not logged"
grep -q "oversized" "$work/px.log" || fail "oversized message not logged"

# a client killed in the middle of a 64 MiB write
kill_mid_write 1
timeout 60 "$vb" quick >/dev/null || fail "proxy unusable after a client died mid-write"
echo "client killed mid-write: session freed, proxy still serving"

# 16 clients at once
pids=""
for i in $(seq 16); do timeout 300 "$vb" quick >"$work/c$i.out" 2>&1 & pids="$pids $!"; done
bad=0
for p in $pids; do wait "$p" || bad=$((bad + 1)); done
[ $bad -eq 0 ] || { cat "$work"/c*.out; fail "$bad of 16 concurrent clients failed"; }
echo "16 concurrent clients: all passed"

# a proxy killed in the middle of a read: the client gets an error, no hang
start_proxy px2
px2=$PROXY_PID
"$vb" bigread 2>"$work/br.out" &
br=$!
for _ in $(seq 100); do grep -q transferring "$work/br.out" && break; sleep 0.1; done
sleep 1
kill -KILL "$px2"
t0=$(date +%s.%N)
for _ in $(seq 150); do kill -0 $br 2>/dev/null || break; sleep 0.1; done
if kill -0 $br 2>/dev/null; then kill -KILL $br; fail "client still running 15 s after the proxy died"; fi
wait $br
rc=$?
t1=$(date +%s.%N)
cat "$work/br.out"
[ $rc -eq 3 ] || fail "client exit $rc, expected a transfer error"
grep -q "connection to the proxy lost" "$work/br.out" || fail "no message about the lost proxy"
echo "proxy killed mid-read: client error after $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"
proxy_pids=$(echo "$proxy_pids" | sed "s/ $px2\b//")

# a proxy that hangs (SIGSTOP) in the middle of a read: the heartbeat gives
# up after MPIGPU_VCL_TIMEOUT seconds
start_proxy px3
px3=$PROXY_PID
MPIGPU_VCL_TIMEOUT=4 "$vb" bigread 2>"$work/hr.out" &
hr=$!
for _ in $(seq 100); do grep -q transferring "$work/hr.out" && break; sleep 0.1; done
sleep 1
kill -STOP "$px3"
t0=$(date +%s.%N)
for _ in $(seq 300); do kill -0 $hr 2>/dev/null || break; sleep 0.1; done
if kill -0 $hr 2>/dev/null; then kill -KILL $hr; kill -KILL "$px3"; fail "client hung with a stopped proxy"; fi
wait $hr
rc=$?
t1=$(date +%s.%N)
kill -KILL "$px3"
wait "$px3" 2>/dev/null
proxy_pids=$(echo "$proxy_pids" | sed "s/ $px3\b//")
[ $rc -eq 3 ] || { cat "$work/hr.out"; fail "client exit $rc with a hung proxy"; }
grep -q "no answer from the proxy" "$work/hr.out" || fail "no message about the silent proxy"
echo "proxy hung mid-read: client error after $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"

while [ $(($(date +%s) - stall_t0)) -lt 12 ]; do sleep 1; done
grep -q "refused: bad or missing HELLO" "$work/px.log" || fail "a stalled handshake was not dropped"
exec 3<&-
echo "stalled handshake: dropped"
wait $idle || { cat "$work/idle.out"; fail "an idle client lost its proxy"; }
echo "idle client: still served after 12 s"

export MPIGPU_VCL_SERVERS=$addr
stop_proxy "$px"
grep -q "connected and authenticated" "$work/px.log" || fail "no connect log"
echo "PASS"
