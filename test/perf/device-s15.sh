#!/bin/bash
# Session 15 on the lent GPU machine (doc/performance.md, "Session 15"), from
# a bundle of shared/tools/device-bundle.sh:
#   check: the unit tests of the pack engine (the host walk split long and
#          short) and of the calibration, and the datatype oracle under auto;
#   final: what the host copy pool's change (helpers that watch for the next
#          job, four parts per thread) and the calibration's cells timed in
#          turns touch on a discrete GPU: the table, target 5, target 3,
#          target 1, packs into pageable memory from 1 to 16 MiB (pinned
#          staging copied out by the pool) with the choice of each call
#          counted, and the target-6 ping-pong against a ReadBufferRect send.
set -u
mode=${1:-check}
PB_TIMEOUT=${PB_TIMEOUT:-200}
. "$(dirname "$0")/device-common.sh"
b=$(dirname "$(command -v mpigpu-packbench)")/..
export HWLOC_PLUGINS_PATH=$b/lib
if [ $mode = check ] || [ $mode = all ]; then
  pb test_pack
  pb test_calib
  pb mpiexec -n 1 env MPIGPU_ORACLE_TYPES=200 MPIGPU_ORACLE_SEED=5 dtoracle
fi
if [ $mode = final ] || [ $mode = all ]; then
  pb env MPIGPU_VERBOSE=1 MPIGPU_CALIBRATE=force mpigpu-packbench -D vect:64:8 -m 1M:1M -i 2 \
    --methods pack_d2d
  cat $MPIGPU_CACHE_DIR/calib-*.txt >> $P
  for t in struct struct:strided indexed:8 vect:512:8 vect:64:8 subarray4d; do
    pb mpigpu-packbench -D $t -m 64:4K -i 300 --interleave --methods pack_d2p,floor_d2h
  done
  for t in vect:512:8 vect:512:32 vect:512:128 vect:64:8 subarray4d indexed:8 indexed:128 \
    struct struct:strided; do
    pb mpigpu-packbench -D $t -m 1M:16M -i 100 --interleave --methods pack_d2d,hand_d2d
  done
  pb mpigpu-packbench -D vect:64:8 -m 128M:128M -i 20 --interleave --methods pack_d2p,read_d2h
  for t in cont vect:512:8 vect:512:32 vect:64:8 subarray4d indexed:8 indexed:128 struct; do
    echo "== choices of $t" >> $P
    timeout $PB_TIMEOUT env MPIGPU_VERBOSE=1 mpigpu-packbench -D $t -m 1M:16M -i 10 \
      --interleave --methods pack_d2h,stage_host 2> $O/v.err >> $P
    grep -c "on the host (MPIGPU_PACK=auto" $O/v.err >> $P
  done
  pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 4M:4M -i 50 --baseline rect
fi
