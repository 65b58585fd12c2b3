#!/bin/bash
# device-run.sh OUTDIR: the correctness and speed battery run on a lent GPU
# machine from a bundle made by shared/tools/device-bundle.sh (see
# doc/performance.md).  Needs env.sh of the bundle sourced; writes logs and
# CSV files into OUTDIR and prints a summary.
set -u
out=${1:-.}
mkdir -p "$out"
export MPIGPU_CACHE_DIR=/tmp/mpigpu-cache
# MPICH 4.0.2 itself crashes on types with empty parts on that host, so the
# oracle leaves them out there (see test/mpi/typegen.h).
export MPIGPU_ORACLE_NOEMPTY=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
run() { # name command...
    local name=$1; shift
    echo "== $name: $*"
    local t0=$(date +%s.%N)
    "$@" >"$out/$name.log" 2>&1
    local rc=$?
    printf '   rc=%d  %.1f s\n' $rc "$(echo "$(date +%s.%N) - $t0" | bc)"
    tail -n 3 "$out/$name.log"
}
run unit_pack test_pack
run oracle dtoracle
run oracle_copy env MPIGPU_PACK=copy MPIGPU_ORACLE_TYPES=300 MPIGPU_ORACLE_SEED=5 dtoracle
run oracle_chunk env MPIGPU_CHUNK=4K MPIGPU_ORACLE_TYPES=300 MPIGPU_ORACLE_SEED=6 dtoracle
run api api
run pack_basic pack_basic
run p2p_basic mpiexec -n 2 p2p_basic
run p2p_chunk mpiexec -n 2 env MPIGPU_STAGING_MAX=64K p2p_chunk big
run p2p_misc mpiexec -n 2 p2p_misc
run p2p_misc4 mpiexec -n 4 p2p_misc
run p2p_pingpong mpiexec -n 2 p2p_pingpong
run p2p_persist mpiexec -n 2 p2p_persist
run p2p_mprobe mpiexec -n 3 env MPIGPU_STAGING_MAX=64K p2p_mprobe
run p2p_threads mpiexec -n 2 env MPIGPU_STAGING_MAX=2M p2p_threads
run locality mpiexec -n 3 env MPIGPU_VERBOSE=1 locality
run pingpong mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 64:4M -d device:device --baseline rect
for spec in ${MGRUN_TYPES:-vect:64:8@128M cont@128M vect:512:8@16M vect:512:128@16M \
    indexed:8@16M struct@16M subarray4d@32M}; do
    d=${spec%@*} max=${spec#*@} f=$(echo "${spec%@*}" | tr ':' '_')
    run "pb_$f" mpigpu-packbench -D "$d" -m "64:$max" --csv "$out/pb_$f.csv"
done
for f in "$out"/pb_*.log; do echo "--- $f"; cat "$f"; done
tar -C "$out" -czf "$out.tgz" . # one file to fetch
