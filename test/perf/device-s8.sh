#!/bin/bash
# device-s8.sh: session 8's runs (doc/performance.md, "Session 8"), from a bundle of
# shared/tools/device-bundle.sh (with device-common.sh beside it) with env.sh sourced.
#   device-s8.sh p2p    on nvidia-h200-x2: the chunked protocol against a host receive
#                       (device:host, whose return trip is a plain host message into a
#                       device receive), against plain messages; host:host under both
#                       protocols (what a host receive of one chunk or more pays for
#                       being watched); device:device again
#   device-s8.sh ab     the same code against an older libmpigpu.so.0 in $S7LIB (A/B in
#                       one run), then the contiguous and strided host-receive cases
set -u
mode=${1:-p2p}
PB_TIMEOUT=200
. "$(dirname "$0")/device-common.sh"
C="MPIGPU_STAGING_MAX=16M MPIGPU_P2P_PROTOCOL=chunked"
if [ $mode = p2p ]; then
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K MPIGPU_P2P_PROTOCOL=chunked p2p_misc
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K MPIGPU_P2P_PROTOCOL=chunked p2p_pingpong pipe
  PP="mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4"
  for r in 1 2; do
    for s in device:host host:host device:device; do
      pb mpiexec -n 2 env MPIGPU_STAGING_MAX=16M $PP -d $s
      pb mpiexec -n 2 env $C $PP -d $s
    done
  done
fi
if [ $mode = ab ]; then
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K MPIGPU_P2P_PROTOCOL=chunked p2p_pingpong pipe
  PP="mpigpu-pingpong -D vect:64:8 -m 4M:64M -W 4"
  for r in 1 2; do
    pb mpiexec -n 2 env $C LD_LIBRARY_PATH=$S7LIB:$LD_LIBRARY_PATH $PP
    pb mpiexec -n 2 env $C $PP
  done
  for r in 1 2; do
    for p in plain chunked; do
      pb mpiexec -n 2 env MPIGPU_STAGING_MAX=16M MPIGPU_P2P_PROTOCOL=$p \
        mpigpu-pingpong -D cont -m 1M:64M -W 4 -d device:host
      pb mpiexec -n 2 env MPIGPU_STAGING_MAX=16M MPIGPU_P2P_PROTOCOL=$p \
        mpigpu-pingpong -D vect:64:8 -m 1M:16M -W 4 -d host:host
    done
  done
fi
if [ $mode = host ]; then
  # After the fix of 3279908: every host receive lands in host memory of its own
  for p in plain chunked; do
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=16M MPIGPU_P2P_PROTOCOL=$p \
      mpigpu-pingpong -D cont -m 1M:64M -W 4 -d device:host
  done
  pb mpiexec -n 2 env $C mpigpu-pingpong -D vect:64:8 -m 1M:16M -W 4 -d device:host
  pb mpiexec -n 2 env $C LD_LIBRARY_PATH=$S7LIB:$LD_LIBRARY_PATH mpigpu-pingpong -D vect:64:8 -m 4M:64M -W 4
  pb mpiexec -n 2 env $C mpigpu-pingpong -D vect:64:8 -m 4M:64M -W 4
fi
