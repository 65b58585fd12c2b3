#!/bin/bash
# device-s6.sh: session 6's runs (doc/performance.md, "Session 6"), from a bundle of
# shared/tools/device-bundle.sh with env.sh sourced.  Output in OUT.
#   device-s6.sh pack   on the H100: the issue-4 targets 1 to 5 with the methods timed in
#                       rounds (mpigpu-packbench --interleave); target 3 also without
#   device-s6.sh calib  on the H100 after the calibrated cost per copy command: the
#                       calibration's table, target 5 again, test_calib
#   device-s6.sh p2p    on nvidia-h200-x2: long plain messages with and without kept host
#                       buffers (MPIGPU_STAGING_KEEP) against the chunked protocol, and
#                       target 6
set -u
mode=${1:-pack}
PB_TIMEOUT=200
. "$(dirname "$0")/device-common.sh"
if [ $mode = pack ]; then
  pb dtoracle
  timeout 120 mpigpu-packbench -D vect:64:8 -m 1M:1M -i 2 --methods pack_d2d > $O/warm.log 2>&1
  T3="vect:512:8 vect:512:32 vect:512:128 vect:64:8 subarray4d indexed:8 indexed:128 struct struct:strided"
  for r in 1 2; do
    for t in $T3; do
      pb mpigpu-packbench -D $t -m 1M:16M -i 100 --interleave --methods pack_d2d,hand_d2d
    done
  done
  for t in $T3; do
    pb mpigpu-packbench -D $t -m 1M:16M -i 100 --methods pack_d2d,hand_d2d
  done
  pb mpigpu-packbench -D vect:64:8 -m 128M:128M -i 20 --interleave --methods pack_d2p,read_d2h,pack_d2d,hand_d2d
  pb mpigpu-packbench -D vect:64:8 -m 1M:16M -i 20 --interleave --methods pack_d2p,copy_d2h,read_d2h
  for t in vect:512:8 indexed:8 struct subarray4d; do
    pb mpigpu-packbench -D $t -m 64:4K -i 300 --interleave --methods pack_d2p,floor_d2h
  done
elif [ $mode = calib ]; then
  pb test_calib
  pb env MPIGPU_VERBOSE=1 MPIGPU_CALIBRATE=force dtoracle
  cat $MPIGPU_CACHE_DIR/calib-*.txt >> $P
  for t in struct struct:strided indexed:8 vect:512:8 subarray4d; do
    pb mpigpu-packbench -D $t -m 64:4K -i 300 --interleave --methods pack_d2p,floor_d2h
  done
  for t in struct indexed:8; do
    pb mpigpu-packbench -D $t -m 1M:16M -i 100 --interleave --methods pack_d2d,hand_d2d
  done
elif [ $mode = p2p ]; then
  b=$(dirname "$(command -v mpigpu-pingpong)")/..
  export HWLOC_PLUGINS_PATH=$b/lib
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K p2p_pingpong_long long
  pb mpiexec -n 2 env MPIGPU_STAGING_MAX=64K p2p_chunk big
  for r in 1 2; do
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=16M mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=16M MPIGPU_STAGING_KEEP=0 mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4
    pb mpiexec -n 2 env MPIGPU_STAGING_MAX=16M MPIGPU_P2P_PROTOCOL=chunked mpigpu-pingpong -D vect:64:8 -m 1M:64M -W 4
  done
  pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 1M:16M --baseline rect
  pb mpiexec -n 2 mpigpu-pingpong -D cont -m 1M:16M -d host
fi
