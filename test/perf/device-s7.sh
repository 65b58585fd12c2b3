#!/bin/bash
# device-s7.sh: session 7's runs (doc/performance.md, "Session 7"), from a bundle of
# shared/tools/device-bundle.sh (with device-common.sh beside it) with env.sh sourced.
#   device-s7.sh p2p    on nvidia-h200-x2: the chunked protocol with one piece in flight
#                       (MPIGPU_P2P_DEPTH=1, as before) against three, plain messages
#                       beside them, and target 6 with smaller chunks
set -u
mode=${1:-p2p}
PB_TIMEOUT=200
. "$(dirname "$0")/device-common.sh"
if [ $mode = p2p ]; then
  b=$(dirname "$(command -v mpigpu-pingpong)")/..
  export HWLOC_PLUGINS_PATH=$b/lib
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K MPIGPU_P2P_PROTOCOL=chunked p2p_pingpong_pipe pipe
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K MPIGPU_P2P_PROTOCOL=chunked p2p_chunked big
  PP="mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4"
  for r in 1 2; do
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=16M $PP
    for d in 1 3; do
      pb mpiexec -n 2 env MPIGPU_STAGING_MAX=16M MPIGPU_P2P_PROTOCOL=chunked MPIGPU_P2P_DEPTH=$d $PP
    done
  done
  for m in 4M 8M; do
    for d in 1 3; do
      pb mpiexec -n 2 env MPIGPU_STAGING_MAX=$m MPIGPU_P2P_PROTOCOL=chunked MPIGPU_P2P_DEPTH=$d \
        mpigpu-pingpong -D vect:64:8 -m 1M:16M --baseline rect
    done
  done
  pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 1M:16M --baseline rect
  pb mpiexec -n 2 mpigpu-pingpong -D cont -m 1M:16M -d host
fi
