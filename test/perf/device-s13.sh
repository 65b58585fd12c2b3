#!/bin/bash
# Session 13 on the lent GPU machine (doc/performance.md, "Session 13"), from
# a bundle of shared/tools/device-bundle.sh:
#   check: the unit tests of the pack engine and the calibration on the GPU
#          (the threaded host walk among them), and the datatype oracle with
#          MPIGPU_PACK=host (stage the extent, walk on the host);
#   final: the host method (read of the extent, then the host walk) against
#          the host's MPI_Pack of the same bytes and against copy-then-MPI_Pack
#          (stage_host), and the auto choice with the new calibration, for the
#          paper's types from 1 to 16 MiB, two rounds.
set -u
mode=${1:-check}
PB_TIMEOUT=${PB_TIMEOUT:-200}
. "$(dirname "$0")/device-common.sh"
if [ $mode = check ] || [ $mode = all ]; then
  pb test_pack
  pb test_calib
  pb mpiexec -n 1 env MPIGPU_PACK=host MPIGPU_ORACLE_TYPES=200 MPIGPU_ORACLE_SEED=4 dtoracle
fi
if [ $mode = final ] || [ $mode = all ]; then
  for r in 1 2; do
    for D in vect:512:128 vect:512:32 vect:64:8 subarray4d indexed:128 struct; do
      pb mpigpu-packbench -D $D -m 1M:16M -i 10 --interleave --method host \
        --methods pack_d2h,stage_host,host_pack
      pb mpigpu-packbench -D $D -m 1M:16M -i 10 --interleave \
        --methods pack_d2h,hand_d2h,stage_host,host_pack
    done
  done
fi
