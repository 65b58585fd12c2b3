#!/bin/bash
# Session 14 on the lent GPU machine (doc/performance.md, "Session 14"), from
# a bundle of shared/tools/device-bundle.sh:
#   check: the unit tests of the pack engine and of the calibration (format 5,
#          the sparse vector), and the datatype oracle under auto;
#   final: the calibration's table on the GPU, then the issue-4 targets that
#          the method choice touches, with the new table: target 5 (64 B to
#          4 KiB into pinned memory against the floor, where auto may now
#          stage any type on the host), target 3 (device to device against the
#          hand kernel), target 1, and packs into pageable memory from 1 to
#          16 MiB with the choice of each call counted (MPIGPU_VERBOSE).
set -u
mode=${1:-check}
PB_TIMEOUT=${PB_TIMEOUT:-200}
. "$(dirname "$0")/device-common.sh"
if [ $mode = check ] || [ $mode = all ]; then
  pack_checks
fi
if [ $mode = final ] || [ $mode = all ]; then
  pack_targets
  pageable_choices vect:512:8 vect:512:32 vect:64:8 subarray4d indexed:8 indexed:128 struct
fi
