#!/bin/bash
# device-s4.sh: session 4's runs on the H100 (doc/performance.md, "Session 4"), from a
# bundle of shared/tools/device-bundle.sh with env.sh sourced.  Output in OUT.
#   device-s4.sh probe   where a small device-to-device pack's time goes (launchprobe,
#                        the per-call gap against the hand kernel) and target 5
#   device-s4.sh pack    after the grid kernels' struct argument: correctness (also
#                        MPIGPU_PACK=host), the per-call gap, targets 3 and 5
#   device-s4.sh vcl     the remote path: launch + clFinish and bandwidth, TCP and lanes
set -u
mode=${1:-probe}
O=${OUT:-/tmp/out}; mkdir -p $O
export MPIGPU_CACHE_DIR=/tmp/mpigpu-cache MPIGPU_ORACLE_NOEMPTY=1
P=$O/$mode.log
pb() { echo "== $*" >> $P; timeout 150 "$@" >> $P 2>&1; echo "rc=$?" >> $P; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpu.txt 2>&1
nproc >> $O/gpu.txt; grep -m1 'model name' /proc/cpuinfo >> $O/gpu.txt
if [ $mode = probe ]; then
  pb test_pack
  pb dtoracle
  timeout 120 mpigpu-packbench -D vect:64:8 -m 1M:1M -i 2 --methods pack_d2d > $O/warm.log 2>&1
  for r in 1 2; do
    pb launchprobe -i 2000 8 128 1024 16384 131072
    pb mpigpu-packbench -D vect:512:8 -m 64:1M -i 500 --methods pack_d2d,hand_d2d
    pb env MPIGPU_PACK=kernel mpigpu-packbench -D vect:512:8 -m 64:1M -i 500 --methods pack_d2d,hand_d2d
  done
  for t in vect:64:8 vect:512:8 struct subarray4d indexed:8; do
    pb mpigpu-packbench -D $t -m 64:4K -i 500 --methods pack_d2p,pack_d2h,floor_d2h,hand_d2h
  done
  for t in vect:512:8 vect:512:32 vect:512:128; do
    pb mpigpu-packbench -D $t -m 1M:16M -i 20 --methods pack_d2d,hand_d2d
  done
  grep -c 'wrong bytes' $P >> $P
  exit 0
fi
if [ $mode = pack ]; then
  pb test_pack
  pb dtoracle
  pb env MPIGPU_PACK=host MPIGPU_ORACLE_TYPES=300 dtoracle
  pb env MPIGPU_CALIBRATE=force MPIGPU_ORACLE_TYPES=300 dtoracle
  timeout 120 mpigpu-packbench -D vect:64:8 -m 1M:1M -i 2 --methods pack_d2d > $O/warm.log 2>&1
  pb launchprobe -i 2000 8 1024 131072
  for r in 1 2; do
    pb mpigpu-packbench -D vect:512:8 -m 64:1M -i 500 --methods pack_d2d,hand_d2d
  done
  for r in 1 2; do
    for t in vect:512:8 vect:512:32 vect:512:128 vect:64:8 subarray4d indexed:8 indexed:128 struct struct:strided; do
      pb mpigpu-packbench -D $t -m 1M:16M -i 20 --methods pack_d2d,hand_d2d
    done
  done
  for t in vect:64:8 vect:512:8 vect:512:128 struct subarray4d indexed:8; do
    pb mpigpu-packbench -D $t -m 64:4K -i 500 --methods pack_d2p,pack_d2h,floor_d2h
  done
  grep -c 'wrong bytes' $P >> $P
  exit 0
fi
