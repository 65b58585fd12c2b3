#!/bin/bash
# The one-copy lane (cross-memory attach; client and proxy on one host, on
# top of the shm lane): on by default, provably used (the proxy's "one-copy
# lane" line and byte count, the client's MPIGPU_VCL_STATS cma_out/cma_in),
# byte-exact (vcl_basic: odd offsets, host addresses and lengths,
# non-blocking transfers in flight together, sub-buffers, rects, maps);
# off with MPIGPU_VCL_CMA=0, the proxy's --no-cma or MPIGPU_VCL_SHM=0, with
# the same checks passing on the shm or stream lane; a client that cannot
# be attached to (non-dumpable) silently stays on the shm lane; the
# handshake refuses a pid other than the client's and a wrong nonce.
# Where the kernel or a seccomp filter refuses cross-memory attach outright
# (ENOSYS, EPERM even on the process itself), the lane cannot exist: skip,
# saying so, rather than fail.
if ! python3 - <<'PY'
import ctypes, ctypes.util, os, sys
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
class iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
src, dst = ctypes.create_string_buffer(b"probe", 8), ctypes.create_string_buffer(8)
l, r = iov(ctypes.cast(dst, ctypes.c_void_p), 8), iov(ctypes.cast(src, ctypes.c_void_p), 8)
libc.process_vm_readv.restype = ctypes.c_ssize_t
n = libc.process_vm_readv(os.getpid(), ctypes.byref(l), 1, ctypes.byref(r), 1, 0)
if n != 8 or dst.raw[:5] != b"probe":
    print("vcl_cma: process_vm_readv on itself failed:", os.strerror(ctypes.get_errno()))
    sys.exit(1)
PY
then
    echo "vcl_cma: SKIP: this machine refuses cross-memory attach"
    exit 77
fi
. "$(dirname "$0")/common.sh"
vb="$top/test/remote/vcl_basic"
cmalines() { grep -c "one-copy lane (cross-memory attach)" "$work/$1.log"; }
# stat NAME FILE: the client's counter NAME from its MPIGPU_VCL_STATS line
stat() { sed -n "s/^mpigpu-vcl: messages=.* $1=\([0-9]*\).*/\1/p" "$2" | tail -n 1; }
export MPIGPU_VCL_STATS=1

start_proxy px
timeout 300 "$vb" 2>"$work/all.err" || { cat "$work/all.err"; fail "vcl_basic over the one-copy lane"; }
[ "$(cmalines px)" -eq 1 ] || fail "the session did not use the one-copy lane"
out=$(stat cma_out "$work/all.err") in=$(stat cma_in "$work/all.err")
[ "${out:-0}" -gt $((64 << 20)) ] && [ "${in:-0}" -gt $((64 << 20)) ] ||
    fail "the client sent little by the one-copy lane: cma_out=$out cma_in=$in"
# the proxy's own count, logged when the session ends
for _ in $(seq 50); do grep -q "one-copy lane moved" "$work/px.log" && break; sleep 0.1; done
moved=$(sed -n 's/.*one-copy lane moved \([0-9]*\) bytes in, \([0-9]*\) out.*/\1 \2/p' "$work/px.log" | tail -n 1)
[ -n "$moved" ] && [ "${moved% *}" -gt $((64 << 20)) ] && [ "${moved#* }" -gt $((64 << 20)) ] ||
    fail "the proxy moved too little by the one-copy lane: $moved"
echo "vcl_basic: passed over the one-copy lane (client cma_out=$out cma_in=$in; proxy in/out $moved)"

# pinned: all of vcl_basic, whose 64 MiB round trip takes 8 pieces through
# the two 8 MiB regions
for mode in staging pinned map; do  # map last: the checks below use its proxy
    stop_proxy "$PROXY_PID"
    what=odd; [ $mode = pinned ] && what=all
    MPIGPU_PROXY_CMA_COPY=$mode MPIGPU_PROXY_CMA_THREADS=3 start_proxy "px_$mode"
    timeout 300 "$vb" $what 2>"$work/$mode.err" || { cat "$work/$mode.err"; fail "vcl_basic $what, $mode copies"; }
    [ "$(cmalines "px_$mode")" -ge 1 ] || fail "$mode: the session did not use the one-copy lane"
    echo "vcl_basic $what: passed with MPIGPU_PROXY_CMA_COPY=$mode"
done
MPIGPU_PROXY_CMA_COPY=fast "$top/mpigpu-proxy" --listen 127.0.0.1:0 --key-file "$work/key" \
    2>"$work/badcopy.log" && fail "MPIGPU_PROXY_CMA_COPY=fast accepted"
grep -q "MPIGPU_PROXY_CMA_COPY" "$work/badcopy.log" || fail "no message for MPIGPU_PROXY_CMA_COPY=fast"


n=$(cmalines "px_map")
for off in "MPIGPU_VCL_CMA=0" "MPIGPU_VCL_SHM=0"; do
    env "$off" timeout 300 "$vb" 2>"$work/off.err" || { cat "$work/off.err"; fail "vcl_basic with $off"; }
    [ "$(cmalines px_map)" -eq "$n" ] || fail "$off still used the one-copy lane"
    [ "$(stat cma_out "$work/off.err")" = 0 ] || fail "$off: the client counted one-copy bytes"
    echo "vcl_basic: passed with $off (no one-copy lane)"
done

# the handshake: another process's pid, a second try, a wrong nonce
sleep 300 &
victim=$!
timeout 60 "$top/test/remote/rawclient" "$PROXY_ADDR" "$work/key" cma $victim || fail "rawclient cma"
kill $victim
grep -q "pid $victim does not hold the client's connection" "$work/px_map.log" ||
    fail "no log line for the foreign pid"
grep -q "does not hold the nonce" "$work/px_map.log" || fail "no log line for the wrong nonce"
stop_proxy "$PROXY_PID"

# a process no one may attach to (non-dumpable; a root proxy then needs
# CAP_SYS_PTRACE, which setpriv takes away): the one-copy lane is refused,
# the shm lane carries on
wrap=
if [ "$(id -u)" = 0 ]; then
    command -v setpriv >/dev/null || { echo "vcl_cma: root without setpriv: cannot test a refused attach"; echo PASS; exit 0; }
    wrap="setpriv --bounding-set=-sys_ptrace"
fi
PROXY_WRAP=$wrap start_proxy nod
timeout 300 "$vb" nodump 2>"$work/nodump.err" || { cat "$work/nodump.err"; fail "vcl_basic nodump"; }
[ "$(cmalines nod)" -eq 0 ] || fail "a non-dumpable client got the one-copy lane"
[ "$(stat cma_out "$work/nodump.err")" = 0 ] || fail "nodump: the client counted one-copy bytes"
grep -q "shared-memory bulk lane" "$work/nod.log" || fail "nodump: not on the shm lane"
grep -Eq "cannot read the client's memory|does not hold the client's connection" "$work/nod.log" ||
    fail "no log line for the refused attach"
echo "non-dumpable client: attach refused ($(grep -Eo "cannot read the client's memory|does not hold the client's connection" "$work/nod.log")), shm lane, passed"

stop_proxy "$PROXY_PID"

start_proxy noc --no-cma
timeout 300 "$vb" odd 2>"$work/noc.err" || { cat "$work/noc.err"; fail "vcl_basic odd with --no-cma"; }
[ "$(cmalines noc)" -eq 0 ] || fail "--no-cma still used the one-copy lane"
[ "$(stat cma_out "$work/noc.err")" = 0 ] || fail "--no-cma: the client counted one-copy bytes"
grep -q "shared-memory bulk lane" "$work/noc.log" || fail "--no-cma: not on the shm lane"
stop_proxy "$PROXY_PID"
echo "--no-cma: shm lane, passed"
echo "PASS"
