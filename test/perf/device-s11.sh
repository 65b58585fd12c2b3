#!/bin/bash
# Session 11 on the lent GPU machine (doc/performance.md, "Session 11"), from
# a bundle of shared/tools/device-bundle.sh:
#   check: the point-to-point tests on the GPU (2 ranks) under the default
#          protocol (auto), as they are and made to send pieces from 16K on;
#   final: target 6 with the default settings against the plain protocol,
#          the first piece's length and auto's threshold, and what auto costs
#          host receives (host to host, device to host, a window of 4).
set -u
mode=${1:-check}
PB_TIMEOUT=${PB_TIMEOUT:-200}
. "$(dirname "$0")/device-common.sh"
A="MPIGPU_STAGING_MAX=64K MPIGPU_P2P_AUTO_MIN=16K"
PL="MPIGPU_P2P_PROTOCOL=plain"
if [ $mode = check ] || [ $mode = all ]; then
  pb mpiexec -n 2 p2p_misc
  pb mpiexec -n 2 env $A p2p_misc
  pb mpiexec -n 2 env $A p2p_probe
  pb mpiexec -n 2 env $A p2p_basic big
  pb mpiexec -n 2 env $A MPIGPU_P2P_SHM_PIECE=64K p2p_pingpong lane
fi
if [ $mode = final ] || [ $mode = all ]; then
  PP="mpigpu-pingpong -D vect:64:8 --baseline rect"
  for r in 1 2; do
    pb mpiexec -n 2 $PP -m 64K:16M
    pb mpiexec -n 2 env $PL $PP -m 64K:16M
  done
  for f in 16K 256K 1M; do
    pb mpiexec -n 2 env MPIGPU_P2P_FIRST=$f mpigpu-pingpong -D vect:64:8 -m 1M:16M
  done
  pb mpiexec -n 2 env MPIGPU_P2P_AUTO_MIN=64K mpigpu-pingpong -D vect:64:8 -m 64K:1M
  for d in host:host device:host host:device; do
    for D in cont vect:64:8; do
      pb mpiexec -n 2 mpigpu-pingpong -D $D -d $d -m 16K:16M -i 100
      pb mpiexec -n 2 env $PL mpigpu-pingpong -D $D -d $d -m 16K:16M -i 100
    done
  done
  for p in auto plain; do
    pb mpiexec -n 2 env MPIGPU_P2P_PROTOCOL=$p mpigpu-pingpong -D cont -d host:host -m 64K:16M -i 50 -W 4
    pb mpiexec -n 2 env MPIGPU_P2P_PROTOCOL=$p mpigpu-pingpong -D cont -d device:host -m 64K:16M -i 50 -W 4
  done
fi
