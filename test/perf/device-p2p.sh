#!/bin/bash
# device-p2p.sh OUTDIR: point-to-point battery on a lent machine with one GPU
# per rank (nvidia-h200-x2), from a bundle of shared/tools/device-bundle.sh
# (env.sh sourced).  hwloc's PCI and OpenCL plugins travel in the bundle's lib
# folder.  Writes logs into OUTDIR and prints a summary.
set -u
out=${1:-.}
mkdir -p "$out"
b=$(dirname "$(command -v mpigpu-pingpong)")/..
export HWLOC_PLUGINS_PATH=$b/lib MPIGPU_CACHE_DIR=/tmp/mpigpu-cache MPIGPU_ORACLE_NOEMPTY=1
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader 2>/dev/null
nvidia-smi topo -m 2>/dev/null | head -8
run() { # name command...
    local name=$1; shift
    echo "== $name: $*"
    local t0=$(date +%s.%N)
    "$@" >"$out/$name.log" 2>&1
    printf '   rc=%d  %.1f s\n' $? "$(echo "$(date +%s.%N) - $t0" | bc)"
    tail -n 4 "$out/$name.log"
}
run locality mpiexec -n 2 env MPIGPU_VERBOSE=1 locality
run twin twin
run p2p_basic mpiexec -n 2 p2p_basic
run p2p_chunk mpiexec -n 2 env MPIGPU_STAGING_MAX=64K p2p_chunk big
run p2p_chunked mpiexec -n 2 env MPIGPU_STAGING_MAX=64K MPIGPU_P2P_PROTOCOL=chunked p2p_chunked big
run p2p_misc mpiexec -n 2 p2p_misc
run p2p_misc_chunk mpiexec -n 2 env MPIGPU_STAGING_MAX=64K p2p_misc_chunk
run p2p_misc4 mpiexec -n 4 p2p_misc4
run p2p_persist mpiexec -n 2 p2p_persist
run p2p_mprobe mpiexec -n 3 env MPIGPU_STAGING_MAX=64K p2p_mprobe
run p2p_threads mpiexec -n 2 env MPIGPU_STAGING_MAX=2M p2p_threads
run p2p_pingpong mpiexec -n 2 p2p_pingpong
run pp_vect mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 64:16M -W 8 --baseline rect --csv "$out/pp_vect.csv"
run pp_vect_chunked mpiexec -n 2 env MPIGPU_P2P_PROTOCOL=chunked MPIGPU_STAGING_MAX=16M mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4
run pp_vect_plain mpiexec -n 2 env MPIGPU_STAGING_MAX=16M mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4
# MPI's own floor for the same bytes: contiguous host buffers on both sides.
run pp_cont_host mpiexec -n 2 mpigpu-pingpong -D cont -m 64:16M -d host -W 8
run pp_vect_host mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 1M:16M -d host -W 8
