#!/bin/bash
# Session 10 on the lent GPU machine (doc/performance.md, "Session 10"), from
# a bundle of shared/tools/device-bundle.sh:
#   check: the probe and order tests on the GPU (2 ranks), under both
#          protocols, and p2p_misc under the chunked one;
#   final: target 6 again (vect:64:8, 4 MiB, against the ReadBufferRect send),
#          plain and chunked with a 256K pool, two rounds.
set -u
mode=${1:-check}
PB_TIMEOUT=${PB_TIMEOUT:-200}
. "$(dirname "$0")/device-common.sh"
C="MPIGPU_P2P_PROTOCOL=chunked"
if [ $mode = check ] || [ $mode = all ]; then
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K p2p_probe
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K $C p2p_probe
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K $C MPIGPU_P2P_SHM=off p2p_probe
  pb mpiexec -n 3 env MPIGPU_STAGING_MAX=64K $C p2p_mprobe
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K $C p2p_misc
fi
if [ $mode = final ] || [ $mode = all ]; then
  PP="mpigpu-pingpong -D vect:64:8 -m 1M:16M --baseline rect"
  for r in 1 2; do
    pb mpiexec -n 2 $PP
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=256K $C $PP
  done
fi
