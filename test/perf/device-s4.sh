#!/bin/bash
# device-s4.sh: session 4's runs on the H100 (doc/performance.md, "Session 4"), from a
# bundle of shared/tools/device-bundle.sh with env.sh sourced.  Output in OUT.
#   device-s4.sh probe   where a small device-to-device pack's time goes (launchprobe,
#                        the per-call gap against the hand kernel) and target 5
#   device-s4.sh pack    after the grid kernels' struct argument: correctness (also
#                        MPIGPU_PACK=host), the per-call gap, targets 3 and 5
#   device-s4.sh vcl     the remote path: launch + clFinish and bandwidth, TCP and lanes
#   device-s4.sh cma     the one-copy lane at 4 to 32 MiB: mapped buffers against pinned
#                        staging (MPIGPU_PROXY_CMA_COPY), native in between
set -u
mode=${1:-probe}
PB_TIMEOUT=150
. "$(dirname "$0")/device-common.sh"
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
# The remote modes: vcl_setup and start_proxy (device-vcl-lib.sh).
. "$(dirname "$0")/device-vcl-lib.sh"
if [ $mode = vcl ]; then
  pb launchprobe -i 2000 8 1024 131072
  vcl_setup
  nat() { OCL_ICD_VENDORS=/tmp/ocl-vendors timeout 150 "$@"; }
  vir() { env OCL_ICD_VENDORS=/tmp/vcl-vendors MPIGPU_VCL_SERVERS=127.0.0.1:$port MPIGPU_VCL_KEY_FILE=$key timeout 150 "$@"; }
  med() { sed -n 's/.*median \([0-9.]*\) us.*/\1/p' | head -1; }
  lat_n() { nat mpigpu-vclbench -l 1000 -n 1 -m 1:1 NVIDIA 2>&1 | med; }
  lat_v() { vir env "$@" mpigpu-vclbench -l 1000 -n 1 -m 1:1 "mpigpu virtual" 2>&1 | med; }
  echo "== launch + clFinish, median of 1000 (us): native / tcp / default lanes" >> $P
  # the last proxy (default spin) stays for the bandwidth and correctness runs
  for sp in 0 30 300 default; do
    [ $sp = 0 ] || { kill -TERM $proxy; wait $proxy; }
    penv=(); [ $sp != default ] && penv=(MPIGPU_PROXY_SPIN=$sp)
    start_proxy "$O/proxy-$sp.log" "${penv[@]}"
    cenv=(MPIGPU_VCL_SPIN=); [ $sp != default ] && cenv=(MPIGPU_VCL_SPIN=$sp)
    for r in 1 2 3; do
      echo "spin $sp round $r: $(lat_n) / $(lat_v "${cenv[@]}" MPIGPU_VCL_SHM=0) / $(lat_v "${cenv[@]}" MPIGPU_VCL_SHM=1)" >> $P
    done
  done
  echo "== raw lat lines" >> $P
  nat mpigpu-vclbench -l 1000 -n 1 -m 1:1 NVIDIA 2>&1 | grep -i median >> $P
  vir env MPIGPU_VCL_SHM=0 mpigpu-vclbench -l 1000 -n 1 -m 1:1 "mpigpu virtual" 2>&1 | grep -i median >> $P
  for cfg in native tcp1 tcp default; do
    echo "== bandwidth $cfg" >> $P
    case $cfg in
      native) nat mpigpu-vclbench -n 3 -m 8:256 NVIDIA >> $P 2>&1 ;;
      tcp1) vir env MPIGPU_VCL_SHM=0 MPIGPU_VCL_STREAMS=1 mpigpu-vclbench -n 3 -m 8:256 "mpigpu virtual" >> $P 2>&1 ;;
      tcp) vir env MPIGPU_VCL_SHM=0 mpigpu-vclbench -n 3 -m 8:256 "mpigpu virtual" >> $P 2>&1 ;;
      default) vir mpigpu-vclbench -n 3 -m 8:256 "mpigpu virtual" >> $P 2>&1 ;;
    esac
  done
  echo "== vcl_basic tcp" >> $P; vir env MPIGPU_VCL_SHM=0 vcl_basic >> $P 2>&1; echo "rc=$?" >> $P
  echo "== vcl_basic default" >> $P; vir vcl_basic >> $P 2>&1; echo "rc=$?" >> $P
  echo "== dtoracle virtual" >> $P; vir env MPIGPU_DEVICE="mpigpu virtual" MPIGPU_ORACLE_TYPES=300 dtoracle >> $P 2>&1; echo "rc=$?" >> $P
  kill -TERM $proxy; wait $proxy; tail -20 $O/proxy-default.log >> $P
  exit 0
fi
if [ $mode = cma ]; then
  vcl_setup
  for r in 1 2; do
    for c in auto map staging; do
      echo "== native" >> $P
      OCL_ICD_VENDORS=/tmp/ocl-vendors timeout 150 mpigpu-vclbench -n 5 -l 10 -m 4:32 NVIDIA 2>&1 | grep MiB >> $P
      start_proxy "$O/proxy-$c.log" MPIGPU_PROXY_CMA_COPY=$c
      echo "== virtual, MPIGPU_PROXY_CMA_COPY=$c" >> $P
      env OCL_ICD_VENDORS=/tmp/vcl-vendors MPIGPU_VCL_SERVERS=127.0.0.1:$port MPIGPU_VCL_KEY_FILE=$key timeout 150 mpigpu-vclbench -n 5 -l 10 -m 4:32 "mpigpu virtual" 2>&1 | grep MiB >> $P
      kill -TERM $proxy; wait $proxy
    done
  done
  exit 0
fi
