# device-common.sh: the setup the device-sN.sh scripts share; sourced after they set mode
# (and PB_TIMEOUT, the seconds one command may take).  Output goes to OUT (default
# /tmp/out): the log of the mode, and gpu.txt with the GPU, driver and CPUs.
O=${OUT:-/tmp/out}; mkdir -p $O
export MPIGPU_CACHE_DIR=/tmp/mpigpu-cache MPIGPU_ORACLE_NOEMPTY=1
P=$O/$mode.log
pb() { echo "== $*" >> $P; timeout ${PB_TIMEOUT:-200} "$@" >> $P 2>&1; echo "rc=$?" >> $P; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpu.txt 2>&1
nproc >> $O/gpu.txt; grep -m1 'model name' /proc/cpuinfo >> $O/gpu.txt
