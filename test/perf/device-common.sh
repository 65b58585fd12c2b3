# device-common.sh: the setup the device-sN.sh scripts share; sourced after they set mode
# (and PB_TIMEOUT, the seconds one command may take).  Output goes to OUT (default
# /tmp/out): the log of the mode, and gpu.txt with the GPU, driver and CPUs.
O=${OUT:-/tmp/out}; mkdir -p $O
export MPIGPU_CACHE_DIR=/tmp/mpigpu-cache MPIGPU_ORACLE_NOEMPTY=1
P=$O/$mode.log
pb() { echo "== $*" >> $P; timeout ${PB_TIMEOUT:-200} "$@" >> $P 2>&1; echo "rc=$?" >> $P; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpu.txt 2>&1
nproc >> $O/gpu.txt; grep -m1 'model name' /proc/cpuinfo >> $O/gpu.txt
# The bundle's root (its lib/ holds the hwloc plugins).
b=$(dirname "$(command -v mpigpu-packbench || command -v mpigpu-pingpong)")/..
export HWLOC_PLUGINS_PATH=$b/lib

# The pack engine's unit tests and the datatype oracle under auto.
pack_checks() {
  pb test_pack
  pb test_calib
  pb mpiexec -n 1 env MPIGPU_ORACLE_TYPES=200 MPIGPU_ORACLE_SEED=5 dtoracle
}

# The calibration's table, measured afresh, then the issue-4 targets the method
# choice touches: 5 (64 B to 4 KiB into pinned memory against the floor), 3 (device
# to device against the hand kernel, 1 to 16 MiB) and 1 (128 MiB against a read).
pack_targets() {
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
}

# Packs of the given types into pageable memory from 1 to 16 MiB against
# copy-then-MPI_Pack, each followed by how many calls auto staged on the host.
pageable_choices() {
  for t in "$@"; do
    echo "== choices of $t" >> $P
    timeout $PB_TIMEOUT env MPIGPU_VERBOSE=1 mpigpu-packbench -D $t -m 1M:16M -i 10 \
      --interleave --methods pack_d2h,stage_host 2> $O/v.err >> $P
    grep -c "on the host (MPIGPU_PACK=auto" $O/v.err >> $P
  done
}
