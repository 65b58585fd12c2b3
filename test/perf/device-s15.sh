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
if [ $mode = check ] || [ $mode = all ]; then
  pack_checks
fi
if [ $mode = final ] || [ $mode = all ]; then
  pack_targets
  pageable_choices cont vect:512:8 vect:512:32 vect:64:8 subarray4d indexed:8 indexed:128 struct
  pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 4M:4M -i 50 --baseline rect
fi
