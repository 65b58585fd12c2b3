#!/bin/bash
# device-run.sh: the measurements and checks that need a GPU, as named suites.
# test/perf/README.md says how to build a bundle, carry it to the lent GPU
# machine and call this script there; doc/performance.md cites its suites.
#
#   test/perf/device-run.sh [-q] [-n] SUITE...
#
# Suites (each writes OUT/SUITE.log):
#   checks    unit tests of the pack engine and the calibration, the datatype
#             oracle under auto, host, copy and small chunks, api, pack_basic
#   pack      mpigpu-packbench: the calibration's table, 64 B to 4 KiB into
#             pinned memory against the floor, 1 to 16 MiB device to device
#             against the hand kernel, 128 MiB against a read, 1 and 16 MiB
#             against ReadBufferRect, packs into pageable memory with the
#             method auto chose, bare launches (launchprobe)
#   host      the host method against copy-then-MPI_Pack and MPI_Pack
#   pingpong  mpigpu-pingpong on 2 ranks: the 4 MiB target against the
#             ReadBufferRect send, auto against plain 64 KiB to 16 MiB, host
#             receives, windows of 4, MPICH's host-to-host floor
#   p2p       the point-to-point tests on 2 to 4 ranks, both protocols, and
#             dmaprobe (transfer rates into each kind of host memory)
#   vcl       the remote path: a proxy on loopback serving the GPU; launch +
#             clFinish and bandwidth natively, over TCP and the default lanes;
#             vcl_basic and the oracle on "mpigpu virtual"
#   cma       the one-copy lane: native, then a fresh proxy per copy method,
#             in rounds, 1 to 256 MiB
#   small     issue 31's ping-pong targets: device to device against the
#             ReadBufferRect send for cont, vect:64:8, subarray4d, indexed:8
#             and struct, 64 B to 16 MiB; 64 B device to device against device
#             to host; MPIGPU_KERNEL_SWITCH=0 against the default on small
#             vectors; packs into pinned memory against a pinned read
#   hostbench host buffers only, plain MPI against LD_PRELOAD=libmpigpu.so
#             (test/perf/hostbench.sh, ROUNDS alternate rounds): latency,
#             osu_bw windows of 1, 4 and 64, Allreduce on 4 ranks, 1 B to 4
#             MiB; then windows and Allreduce with MPIGPU_P2P_PROTOCOL=plain
#             in the preloaded runs (no host receive watched)
#   halo      issue 25's targets: mpigpu-halo on 2 ranks sharing the GPU
#             (HALO_NP to change), 64^3, 128^3 and 256^3 per rank, every
#             mode (p2p, neighbor, enqueue, rect) in ROUNDS alternate rounds,
#             7-point; then the 27-point stencil with width 2 at 128^3; every
#             run must end "verified" (rc=0)
#   enqueue   issue 23's targets: eventprobe (the runtime's events and
#             callbacks, no library); in ROUNDS rounds the 64 B ping-pong
#             enqpingpong (blocking against the enqueue calls), then the same
#             with MPIGPU_ENQUEUE_QUEUE_MAX=0 (packs on the engine's own
#             queue, as before the on-queue packs); the enqueue thread's
#             trace (MPIGPU_VERBOSE=1 sums, =2 a line per job, enqueue half
#             only); enqfile, 256 MiB device against host file I/O to
#             /dev/shm and /tmp, MPI_BYTE and a vector; mpigpu-halo 128^3
#             p2p against enqueue (the overlap target)
#   coll      issue 24: mpigpu-collbench on 2 ranks, device buffers against the
#             staging floor (Bcast, Allreduce, Alltoall, 1 KiB to 64 MiB);
#             Allreduce combined on the device against staging (--reduce both);
#             MPIGPU_COLL_PIPELINE=off against all in ROUNDS rounds;
#             Neighbor_alltoallw of halo faces against Isend/Irecv on 2 and 8
#             ranks; Alltoallv/w of vectors
#   shared    issue 29: sharedbench 256 MiB (page protection on a discrete
#             GPU), with and without kernels, blocks of 256K and 4M, dirty
#             bounds of 1 and 16
#   multigpu  issue 30, on a machine with several GPUs and no MPIGPU_DEVICE:
#             the device choice (MPIGPU_VERBOSE=1), the ping-pong of every -D
#             type 64 B to 64 MiB with --baseline all (indexed and struct
#             baselines to 1 MiB), mpigpu-halo every mode on 2 ranks and on
#             as many ranks as GPUs at 128^3 and 256^3, Allreduce and Alltoall
#             (--reduce both), Neighbor_alltoallw
#   compare   runs COMPARE_SUITES (default "pack pingpong") with two bundles,
#             BEFORE and AFTER (folders holding env.sh), each command once per
#             bundle, one after the other: before/after figures from one run
#   all       checks pack host pingpong p2p vcl cma hostbench
#
# Options: -q quick (tiny sizes and few iterations: tries the runner on PoCL
# in seconds, proves nothing about speed); -n dry (logs the commands only).
#
# Environment: OUT (output folder, default /tmp/out: SUITE.log per suite and
# gpu.txt), PB_TIMEOUT (seconds one command may take, default 200), ROUNDS
# (default 2: rounds of the compared or noisy measurements), BEFORE, AFTER,
# COMPARE_SUITES; for vcl and cma: VCL_DEVICE (the proxy's --device, default
# NVIDIA) and NATIVE_PLATFORM (mpigpu-vclbench's native platform, default
# NVIDIA).  Programs come from PATH: source a bundle's env.sh first.  A
# program that is not on PATH is logged as skipped, not run.
set -u
quick=0 dry=0
while getopts qn o; do
    case $o in
    q) quick=1 ;;
    n) dry=1 ;;
    *) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

O=${OUT:-/tmp/out}
mkdir -p "$O"
PB_TIMEOUT=${PB_TIMEOUT:-200}
ROUNDS=${ROUNDS:-2}
VCL_DEVICE=${VCL_DEVICE:-NVIDIA}
NATIVE_PLATFORM=${NATIVE_PLATFORM:-NVIDIA}
# MPICH 4.0.2's own PMPI_Pack dies on types with empty parts on the GPU
# machine, so the oracle cannot judge them there (test/mpi/typegen.h).
export MPIGPU_ORACLE_NOEMPTY=1
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# Sizes: the measured ones, or tiny ones under -q.
if [ $quick = 1 ]; then
    SMALLPP=64:4K IT_SP=3
    SMALL=64:256 MID=64K:128K BIG=1M:1M P2P=64K:128K PPMID=64K:128K PPBIG=64K:64K DMA_MIB=1
    IT_SMALL=5 IT_MID=3 IT_BIG=2 IT_PP=5 TYPES_N=2 VCL_SIZES=1:2 VCL_BEST=2
    ORACLE_TYPES=20 LAUNCHES=20
else
    SMALLPP=64:16M IT_SP=30
    SMALL=64:4K MID=1M:16M BIG=128M:128M P2P=16K:16M PPMID=64K:16M PPBIG=4M:4M DMA_MIB=64
    IT_SMALL=300 IT_MID=100 IT_BIG=20 IT_PP=100 TYPES_N=99 VCL_SIZES=8:256 VCL_BEST=20
    ORACLE_TYPES=200 LAUNCHES=1000
fi
# the first N words of a list
first() { local n=$1; shift; echo "${@:1:$n}"; }

# The sides a command runs on: the current environment, or under compare
# each bundle's env.sh in turn.
SIDES=(current)
side_env() { # SIDE: the environment of one side, in a subshell
    local dir=
    case $1 in
    before) dir=$BEFORE ;;
    after) dir=$AFTER ;;
    esac
    if [ -n "$dir" ]; then
        # shellcheck disable=SC1091
        . "$dir/env.sh"
        export MPIGPU_CACHE_DIR=/tmp/mpigpu-cache-$1
    fi
    # the bundle's lib/ holds hwloc's plugins
    local bin
    bin=$(command -v mpigpu-packbench || command -v mpigpu-pingpong || true)
    if [ -n "$bin" ]; then
        HWLOC_PLUGINS_PATH=$(dirname "$bin")/../lib
        export HWLOC_PLUGINS_PATH
    fi
    export MPIGPU_CACHE_DIR=${MPIGPU_CACHE_DIR:-/tmp/mpigpu-cache}
}

LOG=/dev/null
fails=0
have() { # PROG: whether it is on PATH in every side (skipped, and logged, if not)
    local s
    for s in "${SIDES[@]}"; do
        if ! (side_env "$s"; command -v "$1" >/dev/null); then
            echo "== skip $1: not on PATH ($s)" >>"$LOG"
            return 1
        fi
    done
}
prog_of() { # the program a command line runs, past env, mpiexec and their options
    while [ $# -gt 0 ]; do
        case $1 in
        env | mpiexec) shift ;;
        -n) shift 2 ;;
        *=*) shift ;;
        *) echo "$1"; return ;;
        esac
    done
}
hdr() { # SIDE TEXT: a command's header line in the log
    if [ "$1" = current ]; then echo "== $2"; else echo "== [$1] $2"; fi
}
# pb CMD...: logs the command, then runs it on each side with its output and
# exit status in the log.
pb() {
    local s rc p
    p=$(prog_of "$@")
    have "$p" || [ $dry = 1 ] || return 0
    for s in "${SIDES[@]}"; do
        hdr "$s" "$*" >>"$LOG"
        [ $dry = 1 ] && continue
        (side_env "$s"; timeout "$PB_TIMEOUT" "$@") >>"$LOG" 2>&1
        rc=$?
        echo "rc=$rc" >>"$LOG"
        [ $rc = 0 ] || fails=$((fails + 1))
    done
}
# pbcount PATTERN CMD...: as pb, with stderr counted for PATTERN instead of logged
pbcount() {
    local pat=$1 s rc p
    shift
    p=$(prog_of "$@")
    have "$p" || [ $dry = 1 ] || return 0
    for s in "${SIDES[@]}"; do
        hdr "$s" "$* (stderr: calls that match '$pat' counted)" >>"$LOG"
        [ $dry = 1 ] && continue
        (side_env "$s"; timeout "$PB_TIMEOUT" "$@") >>"$LOG" 2>"$tmp/err"
        rc=$?
        echo "rc=$rc  $(grep -c "$pat" "$tmp/err") calls: $pat" >>"$LOG"
        [ $rc = 0 ] || fails=$((fails + 1))
    done
}
note() { echo "== $*" >>"$LOG"; }

PAPER_TYPES="vect:512:8 vect:512:32 vect:512:128 vect:64:8 subarray4d indexed:8 indexed:128 struct struct:strided"

suite_checks() {
    pb test_pack
    pb test_calib
    pb mpiexec -n 1 env MPIGPU_ORACLE_TYPES=$ORACLE_TYPES MPIGPU_ORACLE_SEED=5 dtoracle
    pb mpiexec -n 1 env MPIGPU_PACK=host MPIGPU_ORACLE_TYPES=$ORACLE_TYPES MPIGPU_ORACLE_SEED=4 dtoracle
    pb env MPIGPU_PACK=copy MPIGPU_ORACLE_TYPES=$ORACLE_TYPES MPIGPU_ORACLE_SEED=5 dtoracle
    pb env MPIGPU_CHUNK=4K MPIGPU_ORACLE_TYPES=$ORACLE_TYPES MPIGPU_ORACLE_SEED=6 dtoracle
    pb env MPIGPU_CALIBRATE=force MPIGPU_ORACLE_TYPES=$ORACLE_TYPES dtoracle
    pb api
    pb pack_basic
}

suite_pack() {
    local t s
    # The calibration's table, measured afresh; the cache file follows.
    pb env MPIGPU_VERBOSE=1 MPIGPU_CALIBRATE=force mpigpu-packbench -D vect:64:8 -m 1M:1M -i 2 \
        --methods pack_d2d
    if [ $dry = 0 ]; then
        for s in "${SIDES[@]}"; do
            (side_env "$s"; echo "== calibration file ($s)"; cat "$MPIGPU_CACHE_DIR"/calib-*.txt) >>"$LOG" 2>&1
        done
    fi
    # Target 5: 64 B to 4 KiB into pinned memory against an empty kernel and a read.
    for t in $(first $TYPES_N struct struct:strided indexed:8 vect:512:8 vect:64:8 subarray4d); do
        pb mpigpu-packbench -D $t -m $SMALL -i $IT_SMALL --interleave --methods pack_d2p,floor_d2h
    done
    # Target 3: device to device against the hand kernel, 1 to 16 MiB.
    for t in $(first $TYPES_N $PAPER_TYPES); do
        pb mpigpu-packbench -D $t -m $MID -i $IT_MID --interleave --methods pack_d2d,hand_d2d
    done
    # Targets 1 and 4: 128 MiB into pinned memory against one read, and device
    # to device; target 2: 1 to 16 MiB against ReadBufferRect (copy_d2h).
    pb mpigpu-packbench -D vect:64:8 -m $BIG -i $IT_BIG --interleave \
        --methods pack_d2p,read_d2h,pack_d2d,hand_d2d
    pb mpigpu-packbench -D vect:64:8 -m $MID -i $IT_BIG --interleave --methods pack_d2p,copy_d2h,read_d2h
    # Packs into pageable memory against copy-then-MPI_Pack, with how many
    # calls auto staged on the host.
    for t in $(first $TYPES_N cont vect:512:8 vect:512:32 vect:64:8 subarray4d indexed:8 indexed:128 struct); do
        pbcount "on the host (MPIGPU_PACK=auto" env MPIGPU_VERBOSE=1 mpigpu-packbench -D $t -m $MID \
            -i 10 --interleave --methods pack_d2h,stage_host
    done
    # Bare launches, the hand kernel against the library's (no MPI).
    pb launchprobe -i $LAUNCHES 8 1024 131072
    pb mpigpu-packbench -D vect:512:8 -m 64:1M -i $IT_SMALL --methods pack_d2d,hand_d2d
}

suite_host() {
    local r t
    for r in $(seq $ROUNDS); do
        for t in $(first $TYPES_N vect:512:128 vect:512:32 vect:64:8 subarray4d indexed:128 struct); do
            pb mpigpu-packbench -D $t -m $MID -i 10 --interleave --method host \
                --methods pack_d2h,stage_host,host_pack
        done
    done
}

suite_pingpong() {
    local r p d D
    # Target 6: 4 MiB of 8 B every 64 B, device to device, against the
    # ReadBufferRect send.
    pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m $PPBIG -i 50 --baseline rect
    # The default protocol (auto) against plain messages, in alternate rounds.
    for r in $(seq $ROUNDS); do
        pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m $PPMID --baseline rect
        pb mpiexec -n 2 env MPIGPU_P2P_PROTOCOL=plain mpigpu-pingpong -D vect:64:8 -m $PPMID \
            --baseline rect
    done
    # Small messages: the floor of two ranks on one GPU (an empty kernel per side).
    pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 8:${SMALL#*:} -d device:device --baseline all
    # Host receives, auto against plain.
    for d in host:host device:host host:device; do
        for D in cont vect:64:8; do
            pb mpiexec -n 2 mpigpu-pingpong -D $D -d $d -m $P2P -i $IT_PP
            pb mpiexec -n 2 env MPIGPU_P2P_PROTOCOL=plain mpigpu-pingpong -D $D -d $d -m $P2P -i $IT_PP
        done
    done
    # A host receive's rest through the lane (default) or as one message.
    for D in cont vect:64:8; do
        pb mpiexec -n 2 mpigpu-pingpong -D $D -d device:host -m $MID -i 50
        pb mpiexec -n 2 env MPIGPU_P2P_HOST_RECV=message mpigpu-pingpong -D $D -d device:host -m $MID -i 50
    done
    # Windows of 4 receives (osu_bw style), auto against plain.
    for r in $(seq $ROUNDS); do
        for p in auto plain; do
            for d in host:host device:host; do
                pb mpiexec -n 2 env MPIGPU_P2P_PROTOCOL=$p mpigpu-pingpong -D cont -d $d \
                    -m $PPMID -i 50 -W 4
            done
        done
    done
    # MPICH's own host-to-host time for the same bytes.
    pb mpiexec -n 2 mpigpu-pingpong -D cont -m $MID -d host:host
}

suite_p2p() {
    local C=MPIGPU_P2P_PROTOCOL=chunked A="MPIGPU_STAGING_MAX=64K MPIGPU_P2P_AUTO_MIN=16K"
    pb mpiexec -n 2 env MPIGPU_VERBOSE=1 locality
    pb twin
    pb mpiexec -n 2 p2p_basic
    pb mpiexec -n 2 env $A p2p_basic big
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K p2p_chunk big
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K $C p2p_chunked big
    pb mpiexec -n 2 p2p_misc
    pb mpiexec -n 2 env $A p2p_misc
    pb mpiexec -n 2 env $A MPIGPU_P2P_HOST_RECV=message p2p_misc
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K $C p2p_misc
    pb mpiexec -n 4 p2p_misc
    pb mpiexec -n 2 env $A p2p_probe
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K $C MPIGPU_P2P_SHM=off p2p_probe
    pb mpiexec -n 3 env MPIGPU_STAGING_MAX=64K p2p_mprobe
    pb mpiexec -n 3 env MPIGPU_STAGING_MAX=64K $C p2p_mprobe
    pb mpiexec -n 2 p2p_persist
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=2M p2p_threads
    pb mpiexec -n 2 p2p_pingpong
    pb mpiexec -n 2 env $A MPIGPU_P2P_SHM_PIECE=64K p2p_pingpong lane
    pb dmaprobe $DMA_MIB
}

# The remote path: a key, a vendors folder with the native ICDs and the
# bundle's libmpigpu-vcl.so, and a proxy on loopback (pid in proxy, port in port).
vcl_setup() {
    local b
    b=$(cd "$(dirname "$(command -v mpigpu-proxy)")/.." && pwd)
    key=$tmp/key
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$key"
    chmod 600 "$key"
    NATIVE_VENDORS=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
    mkdir -p "$tmp/vcl-vendors"
    cp "$NATIVE_VENDORS"/*.icd "$tmp/vcl-vendors/" 2>/dev/null
    echo "$b/lib/libmpigpu-vcl.so" >"$tmp/vcl-vendors/mpigpu-vcl.icd"
}
start_proxy() { # NAME [VAR=VALUE...]
    local name=$1 _
    shift
    plog=$tmp/proxy-$name.log
    env "$@" OCL_ICD_VENDORS="$NATIVE_VENDORS" mpigpu-proxy --listen 127.0.0.1:0 --key-file "$key" \
        --device "$VCL_DEVICE" >"$plog" 2>&1 &
    proxy=$!
    for _ in $(seq 100); do grep -q "listening on" "$plog" && break; sleep 0.1; done
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$plog" | head -1)
}
stop_proxy() {
    kill -TERM "$proxy"
    wait "$proxy"
    echo "== proxy log ($(basename "$plog"), last lines)" >>"$LOG"
    tail -n 8 "$plog" >>"$LOG"
}
nat() { OCL_ICD_VENDORS="$NATIVE_VENDORS" timeout "$PB_TIMEOUT" "$@"; }
vir() {
    env OCL_ICD_VENDORS="$tmp/vcl-vendors" MPIGPU_VCL_SERVERS=127.0.0.1:$port \
        MPIGPU_VCL_KEY_FILE="$key" timeout "$PB_TIMEOUT" "$@"
}
med() { sed -n 's/.*median \([0-9.]*\) us.*/\1/p' | head -1; }
vcl_ready() {
    local p
    for p in mpigpu-proxy mpigpu-vclbench; do
        command -v $p >/dev/null || { note "skip: $p not on PATH"; return 1; }
    done
    [ $dry = 0 ] || { note "dry run: the remote suites start a proxy, not listed"; return 1; }
    vcl_setup
}

suite_vcl() {
    local r cfg
    vcl_ready || return 0
    start_proxy vcl
    note "launch + clFinish, median of $LAUNCHES (us): native / TCP only / default lanes"
    for r in 1 2 3; do
        echo "round $r: $(nat mpigpu-vclbench -l $LAUNCHES -n 1 -m 1:1 "$NATIVE_PLATFORM" 2>&1 | med)" \
            "/ $(vir env MPIGPU_VCL_SHM=0 mpigpu-vclbench -l $LAUNCHES -n 1 -m 1:1 "mpigpu virtual" 2>&1 | med)" \
            "/ $(vir mpigpu-vclbench -l $LAUNCHES -n 1 -m 1:1 "mpigpu virtual" 2>&1 | med)" >>"$LOG"
    done
    for cfg in native tcp1 tcp4 default; do
        note "bandwidth $cfg: mpigpu-vclbench -n $VCL_BEST -l 10 -m $VCL_SIZES"
        case $cfg in
        native) nat mpigpu-vclbench -n $VCL_BEST -l 10 -m $VCL_SIZES "$NATIVE_PLATFORM" ;;
        tcp1) vir env MPIGPU_VCL_SHM=0 MPIGPU_VCL_STREAMS=1 mpigpu-vclbench -n $VCL_BEST -l 10 \
            -m $VCL_SIZES "mpigpu virtual" ;;
        tcp4) vir env MPIGPU_VCL_SHM=0 MPIGPU_VCL_STREAMS=4 mpigpu-vclbench -n $VCL_BEST -l 10 \
            -m $VCL_SIZES "mpigpu virtual" ;;
        default) vir env MPIGPU_VCL_STATS=1 mpigpu-vclbench -n $VCL_BEST -l 10 -m $VCL_SIZES \
            "mpigpu virtual" ;;
        esac >>"$LOG" 2>&1
    done
    if command -v vcl_basic >/dev/null; then
        note "vcl_basic, TCP only"
        vir env MPIGPU_VCL_SHM=0 vcl_basic >>"$LOG" 2>&1; echo "rc=$?" >>"$LOG"
        note "vcl_basic, default lanes"
        vir vcl_basic >>"$LOG" 2>&1; echo "rc=$?" >>"$LOG"
    fi
    if command -v dtoracle >/dev/null; then
        note "dtoracle on mpigpu virtual"
        vir env MPIGPU_DEVICE="mpigpu virtual" MPIGPU_ORACLE_TYPES=$ORACLE_TYPES dtoracle >>"$LOG" 2>&1
        echo "rc=$?" >>"$LOG"
    fi
    stop_proxy
    # every completion comes from FINISH when the proxy's callbacks send nothing
    if command -v vcl_basic >/dev/null; then
        start_proxy drop MPIGPU_PROXY_TEST_DROP_CALLBACKS=1
        note "vcl_basic, default lanes, proxy without callbacks"
        vir vcl_basic >>"$LOG" 2>&1; echo "rc=$?" >>"$LOG"
        stop_proxy
    fi
}

suite_cma() {
    local r c
    vcl_ready || return 0
    cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null | sed 's/^/yama ptrace_scope /' >>"$LOG"
    for r in $(seq $((ROUNDS + 1))); do
        for c in auto map; do
            note "round $r native: mpigpu-vclbench -n $VCL_BEST -l 10 -m 1:${VCL_SIZES#*:}"
            nat mpigpu-vclbench -n $VCL_BEST -l 10 -m 1:${VCL_SIZES#*:} "$NATIVE_PLATFORM" 2>&1 |
                grep MiB >>"$LOG"
            start_proxy cma-$c MPIGPU_PROXY_CMA_COPY=$c
            note "round $r virtual, MPIGPU_PROXY_CMA_COPY=$c"
            vir env MPIGPU_VCL_STATS=1 mpigpu-vclbench -n $VCL_BEST -l 10 -m 1:${VCL_SIZES#*:} \
                "mpigpu virtual" 2>&1 | grep -E "MiB|mpigpu-vcl:" >>"$LOG"
            stop_proxy
        done
    done
}

suite_small() {
    local D r
    # Device to device against the staging a user writes by hand, every
    # type the ping-pong has; rows end in the method and protocol each rank ran.
    for D in cont vect:64:8 subarray4d indexed:8 struct; do
        pb mpiexec -n 2 mpigpu-pingpong -D $D -m $SMALLPP -i $IT_SP -d device:device --baseline rect
    done
    # 64 B: device to device against device to host (one GPU context only).
    for r in $(seq $ROUNDS); do
        pb mpiexec -n 2 mpigpu-pingpong -D cont -m 64:64 -i $IT_SMALL -d device:device
        pb mpiexec -n 2 mpigpu-pingpong -D cont -m 64:64 -i $IT_SMALL -d device:host
    done
    # A kernel's context switch on the shared GPU: counted (default) or not.
    for r in $(seq $ROUNDS); do
        pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 64:1M -i $IT_PP -d device:device
        pb mpiexec -n 2 env MPIGPU_KERNEL_SWITCH=0 mpigpu-pingpong -D vect:64:8 -m 64:1M \
            -i $IT_PP -d device:device
    done
    # Packs into pinned host memory against a pinned read of the packed bytes.
    for D in vect:64:8 cont subarray4d; do
        pb mpigpu-packbench -D $D -m $MID -i $IT_MID --methods pack_d2p,read_d2h
    done
}

suite_halo() {
    local np=${HALO_NP:-2} r n m g modes it=20
    local sizes="64 128 256"
    [ $quick = 1 ] && sizes="32" it=3
    for n in $sizes; do
        g=$((n * np)):$n:$n # the ranks along x
        for r in $(seq $ROUNDS); do
            [ $((r % 2)) = 0 ] && modes="rect enqueue neighbor p2p" || modes="p2p neighbor enqueue rect"
            for m in $modes; do
                pb mpiexec -n "$np" mpigpu-halo -g $g -p $np:1:1 -i $it --mode $m
            done
        done
    done
    n=$([ $quick = 1 ] && echo 32 || echo 128)
    for m in p2p neighbor enqueue rect; do
        pb mpiexec -n "$np" mpigpu-halo -g $((n * np)):$n:$n -p $np:1:1 -i $it --mode $m \
            --stencil 27 -w 2 --periodic
    done
}

suite_hostbench() {
    local b hb q=
    hb=$(cd "$(dirname "$0")" && pwd)/hostbench.sh
    [ $quick = 1 ] && q=-q
    have hostbench || [ $dry = 1 ] || return 0
    # Each bench in its own command (PB_TIMEOUT each); hostbench.sh finds
    # hostbench on PATH and the library in the bundle's lib/.
    for b in lat bw1 bw4 bw64 allreduce; do
        pb "$hb" $q -r "$ROUNDS" $b
    done
    # The same with no host receive watched: what is left is the other costs.
    for b in bw4 bw64 allreduce; do
        pb env PRELOAD_ENV=MPIGPU_P2P_PROTOCOL=plain "$hb" $q -r "$ROUNDS" $b
    done
}

suite_enqueue() {
    local r m it=100 nr=7 mib=256 ei=50 halo=128 hit=20
    [ $quick = 1 ] && it=20 nr=3 mib=8 ei=5 halo=32 hit=3
    pb eventprobe -i $ei -p "$NATIVE_PLATFORM"
    # Two processes' runtimes at once, as two ranks on one GPU (S22-1: a marker
    # behind a barrier on a user event called back about 20 ms late).
    pb sh -c "eventprobe -i $ei -p '$NATIVE_PLATFORM' & eventprobe -i $ei -p '$NATIVE_PLATFORM'; wait"
    for r in $(seq "$ROUNDS"); do
        pb mpiexec -n 2 enqpingpong 64 $it $nr
        pb mpiexec -n 2 env MPIGPU_ENQUEUE_QUEUE_MAX=0 enqpingpong 64 $it $nr
    done
    pb mpiexec -n 2 env MPIGPU_VERBOSE=1 enqpingpong 64 $it 3 enqueue
    pb mpiexec -n 2 env MPIGPU_VERBOSE=1 MPIGPU_ENQUEUE_QUEUE_MAX=0 enqpingpong 64 $it 3 enqueue
    pb mpiexec -n 2 env MPIGPU_VERBOSE=2 enqpingpong 64 10 1 enqueue
    for r in /dev/shm /tmp; do
        pb mpiexec -n 1 enqfile $mib 5 $r cont
        pb mpiexec -n 1 enqfile $mib 5 $r vect
    done
    for r in $(seq "$ROUNDS"); do
        for m in p2p enqueue; do
            pb mpiexec -n 2 mpigpu-halo -g $((2 * halo)):$halo:$halo -p 2:1:1 -i $hit --mode $m
        done
    done
}

suite_coll() {
    local it=10 big=64M side=64:256 r p
    [ $quick = 1 ] && it=2 big=1M side=16:32
    # Issue 24: device buffers against the staging floor, the defaults.
    pb mpiexec -n 2 mpigpu-collbench -c bcast,allreduce,alltoall -m 1K:$big -i $it -d device
    # Reductions combined on the device against staging, in one run.
    pb mpiexec -n 2 mpigpu-collbench -c allreduce -m 1K:$big -i $it -d device --reduce both
    # Pipelined staging against staging whole, alternate rounds.
    for r in $(seq "$ROUNDS"); do
        for p in off all; do
            pb mpiexec -n 2 env MPIGPU_COLL_PIPELINE=$p mpigpu-collbench -c bcast,allreduce \
                -m 1M:$big -i $it -d device --reduce stage
        done
    done
    # Fused packing: the 6 faces of a 3D halo against 6 Isend/Irecv pairs,
    # on a 1x1x2 grid and on 8 ranks.
    pb mpiexec -n 2 mpigpu-collbench -c neighbor_alltoallw --side $side -i $it -d device
    pb mpiexec -n 8 mpigpu-collbench -c neighbor_alltoallw --side 32:128 -i $it -d device
    pb mpiexec -n 2 mpigpu-collbench -c alltoallv,alltoallw -D vect:64:8 -m 1K:16M -i $it -d device
}

suite_shared() {
    local mib=256 r=3
    [ $quick = 1 ] && mib=8 r=1
    # Issue 29: page protection is the mode on a discrete GPU.
    pb mpiexec -n 1 sharedbench -m $mib -r $r
    pb mpiexec -n 1 sharedbench -m $mib -r $r -n
    for b in 256K 4M; do
        pb mpiexec -n 1 env MPIGPU_SHARED_BLOCK=$b sharedbench -m $mib -r $r
    done
    for d in 1 16; do
        pb mpiexec -n 1 env MPIGPU_SHARED_DIRTY=$d sharedbench -m $mib -r $r
    done
}

# Issue 30: one GPU per rank.  Run without MPIGPU_DEVICE: the library's
# hwloc choice places the ranks (the first command logs why).
suite_multigpu() {
    local D it=30 big=64M np n m g ngpu
    [ $quick = 1 ] && it=3 big=64K
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    [ "$ngpu" -ge 1 ] || ngpu=1
    note "GPUs: $ngpu"
    pb mpiexec -n 2 env MPIGPU_VERBOSE=1 mpigpu-pingpong -D cont -m 64:64 -i 3
    for D in cont vect:64:8 subarray4d; do
        pb mpiexec -n 2 mpigpu-pingpong -D $D -m 64:$big -i $it -d device:device --baseline all
    done
    # The rect baselines of indexed and struct move one block per command: up
    # to 1 MiB with them, then the library alone.
    for D in indexed:8 struct; do
        pb mpiexec -n 2 mpigpu-pingpong -D $D -m 64:1M -i $it -d device:device --baseline all
        [ $quick = 1 ] || pb mpiexec -n 2 mpigpu-pingpong -D $D -m 2M:$big -i $it -d device:device
    done
    pb mpiexec -n 2 mpigpu-pingpong -D cont -m 64:64 -i 300 -d device:host
    for np in 2 $ngpu; do
        [ "$np" -ge 2 ] || continue
        for n in $([ $quick = 1 ] && echo 32 || echo 128 256); do
            g=$((n * np)):$n:$n
            for m in p2p neighbor enqueue rect host; do
                pb mpiexec -n "$np" mpigpu-halo -g $g -p $np:1:1 -i 20 --mode $m
            done
        done
        [ "$np" = 2 ] && [ "$ngpu" = 2 ] && break
    done
    pb mpiexec -n 2 mpigpu-collbench -c allreduce,alltoall -m 1K:$big -i 10 -d device --reduce both
    pb mpiexec -n 2 mpigpu-collbench -c neighbor_alltoallw --side 64:256 -i 10 -d device
}

suite_compare() {
    local r s
    [ -n "${BEFORE:-}" ] && [ -n "${AFTER:-}" ] || {
        note "compare needs BEFORE and AFTER: two bundle folders holding env.sh"
        echo "compare needs BEFORE and AFTER" >&2
        fails=$((fails + 1))
        return 0
    }
    [ -f "$BEFORE/env.sh" ] && [ -f "$AFTER/env.sh" ] || {
        note "no env.sh in $BEFORE or $AFTER"
        fails=$((fails + 1))
        return 0
    }
    SIDES=(before after)
    note "before: $BEFORE $(cat "$BEFORE/REV" 2>/dev/null)"
    note "after: $AFTER $(cat "$AFTER/REV" 2>/dev/null)"
    for r in $(seq $ROUNDS); do
        for s in ${COMPARE_SUITES:-pack pingpong}; do
            note "#### round $r: $s"
            case $s in
            checks | pack | host | pingpong | p2p | small | hostbench | enqueue) suite_$s ;;
            *) note "compare runs checks, pack, host, pingpong, p2p, small, hostbench and enqueue, not $s" ;;
            esac
        done
    done
    SIDES=(current)
}

# The machine: GPU, driver, CPUs, and the bundle's commit where it says.
{
    nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader 2>/dev/null ||
        echo "no nvidia-smi"
    nproc
    grep -m1 'model name' /proc/cpuinfo
    bin=$(command -v mpigpu-packbench || command -v mpigpu-pingpong || true)
    [ -n "$bin" ] && cat "$(dirname "$bin")/../REV" 2>/dev/null
    date -u +%Y-%m-%dT%H:%M:%SZ
} >"$O/gpu.txt" 2>&1

[ "$*" = all ] && set -- checks pack host pingpong p2p vcl cma hostbench
for suite in "$@"; do
    case $suite in
    checks | pack | host | pingpong | p2p | vcl | cma | small | hostbench | halo | enqueue | coll | shared | multigpu | compare) ;;
    *) echo "device-run.sh: no suite $suite" >&2; exit 2 ;;
    esac
done
for suite in "$@"; do
    LOG=$O/$suite.log
    : >"$LOG"
    f0=$fails t0=$(date +%s)
    suite_$suite
    wrong=$(grep -c 'wrong bytes' "$LOG")
    printf '%-9s %4d s  %d failed commands, %d "wrong bytes" lines  (%s)\n' "$suite" \
        $(($(date +%s) - t0)) $((fails - f0)) "$wrong" "$LOG"
    [ "$wrong" = 0 ] || fails=$((fails + 1))
done
[ $fails = 0 ]
