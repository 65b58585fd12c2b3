#!/bin/bash
# device-s9.sh: session 9's runs (doc/performance.md, "Session 9"), from a bundle of
# shared/tools/device-bundle.sh (with device-common.sh beside it) with env.sh sourced.
#   device-s9.sh lane   node lanes (chunked pieces through shared memory) against the
#                       chunked protocol by MPI, plain messages and the ReadBufferRect
#                       send (target 6), device to device on 2 ranks of one node;
#                       MPICH's own host-to-host time for the same bytes
#   device-s9.sh check  correctness of the lane on the device (p2p tests under chunked)
#   device-s9.sh probe  dmaprobe: transfer rates into pageable, pinned and shared memory
#   device-s9.sh final  the lane's defaults against plain messages and the rect send
set -u
mode=${1:-lane}
PB_TIMEOUT=${PB_TIMEOUT:-200}
. "$(dirname "$0")/device-common.sh"
C="MPIGPU_P2P_PROTOCOL=chunked"
if [ $mode = check ]; then
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K $C MPIGPU_P2P_SHM_PIECE=64K p2p_pingpong lane
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K $C p2p_misc
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K $C MPIGPU_P2P_SHM_PIECE=4K MPIGPU_P2P_SHM_SLOTS=2 p2p_basic big
fi
if [ $mode = probe ]; then
  pb dmaprobe 64
fi
if [ $mode = final ]; then
  PP="mpigpu-pingpong -D vect:64:8 -m 1M:16M --baseline rect"
  for r in 1 2; do
    pb mpiexec -n 2 $PP
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=1M $C $PP
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=256K $C $PP
  done
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=1M $C mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=1M $C mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4 -d device:host
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=1M $C MPIGPU_P2P_SHM=off mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4 -d device:host
fi
if [ $mode = lane ]; then
  PP="mpigpu-pingpong -D vect:64:8 -m 1M:16M --baseline rect"
  for r in 1 2; do
    pb mpiexec -n 2 $PP
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=8M $C MPIGPU_P2P_SHM=off $PP
    for pool in 256K 1M 4M; do
      pb mpiexec -n 2 env MPIGPU_STAGING_MAX=$pool $C $PP
    done
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=1M $C MPIGPU_P2P_SHM_PIECE=2M $PP
    pb mpiexec -n 2 mpigpu-pingpong -D cont -m 1M:16M -d host:host
  done
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=1M $C mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4
  pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=1M $C mpigpu-pingpong -D cont -m 1M:64M
  pb mpiexec -n 2 mpigpu-pingpong -D cont -m 1M:64M
fi
