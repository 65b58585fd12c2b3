#!/bin/bash
# Session 12 on the lent GPU machine (doc/performance.md, "Session 12"), from
# a bundle of shared/tools/device-bundle.sh:
#   check: the host-receive tests on the GPU (2 ranks), the rest of a message
#          in pieces (the default) and as one message (MPIGPU_P2P_HOST_RECV);
#   final: a host receive's rest through the lane against one MPI message
#          (device to host, contiguous and 8 B every 64 B), auto against plain
#          for host-to-host windows of 1 and 4 in three alternating rounds,
#          and auto's threshold at 256K against the default 1M;
#   window: the osu_bw window of 4, auto against plain, host to host and
#          device to host, two alternating rounds.  Run in session 12 on a
#          bundle of df7c417 (overlapped dense host receives in place, with
#          a 40-byte header of their own), reverted after p2p_misc failed
#          there (doc/performance.md, "Session 12").
set -u
mode=${1:-check}
PB_TIMEOUT=${PB_TIMEOUT:-200}
. "$(dirname "$0")/device-common.sh"
A="MPIGPU_STAGING_MAX=64K MPIGPU_P2P_AUTO_MIN=16K"
M="MPIGPU_P2P_HOST_RECV=message"
if [ $mode = check ] || [ $mode = all ]; then
  pb mpiexec -n 2 env $A p2p_misc
  pb mpiexec -n 2 env $A $M p2p_misc
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=1M MPIGPU_P2P_FIRST=16K MPIGPU_P2P_AUTO_MIN=32K $M p2p_misc
fi
if [ $mode = final ] || [ $mode = all ]; then
  for r in 1 2; do
    for D in cont vect:64:8; do
      pb mpiexec -n 2 mpigpu-pingpong -D $D -d device:host -m 1M:16M -i 50
      pb mpiexec -n 2 env $M mpigpu-pingpong -D $D -d device:host -m 1M:16M -i 50
    done
  done
  for r in 1 2 3; do
    for p in auto plain; do
      pb mpiexec -n 2 env MPIGPU_P2P_PROTOCOL=$p mpigpu-pingpong -D cont -d host:host -m 64K:16M -i 50 -W 4
    done
  done
  for r in 1 2; do
    pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 128K:2M
    pb mpiexec -n 2 env MPIGPU_P2P_AUTO_MIN=256K mpigpu-pingpong -D vect:64:8 -m 128K:2M
  done
fi
if [ $mode = window ]; then
  pb mpiexec -n 2 env $A p2p_misc
  for r in 1 2; do
    for p in auto plain; do
      for d in host:host device:host; do
        pb mpiexec -n 2 env MPIGPU_P2P_PROTOCOL=$p mpigpu-pingpong -D cont -d $d -m 64K:16M -i 50 -W 4
      done
    done
  done
fi
