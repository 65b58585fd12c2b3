#!/bin/bash
# device-final2.sh: the second end-of-session-3 run (after the view rule for GPUs):
# correctness, then the structs and three paper types against the hand kernel.
# Same bundle as device-final.sh.  Writes OUT/perf2.log.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
export MPIGPU_CACHE_DIR=/tmp/mpigpu-cache MPIGPU_ORACLE_NOEMPTY=1
P=$O/perf2.log
pb() { echo "== $*" >> $P; timeout 150 "$@" >> $P 2>&1; echo "rc=$?" >> $P; }
pb test_pack
pb dtoracle
pb pack_basic
timeout 120 mpigpu-packbench -D vect:64:8 -m 1M:1M -i 2 --methods pack_d2d > $O/warm.log 2>&1
for t in struct struct:strided; do
  pb env MPIGPU_VERBOSE=1 mpigpu-packbench -D $t -m 1M:1M -i 2 --methods pack_d2d
  pb mpigpu-packbench -D $t -m 1M:16M -i 20 --methods pack_d2d,hand_d2d
  pb env PERF_HAND_WPI=4 mpigpu-packbench -D $t -m 1M:16M -i 20 --methods pack_d2d,hand_d2d
done
for t in vect:512:8 subarray4d indexed:8; do pb mpigpu-packbench -D $t -m 1M:16M -i 20 --methods pack_d2d,hand_d2d; done
grep -c 'wrong bytes' $P >> $P
