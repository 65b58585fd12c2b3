#!/bin/bash
# device-final.sh: the end-of-session-3 check on the H100 (doc/performance.md, "End of
# session 3"), from a bundle of shared/tools/device-bundle.sh holding mpigpu-packbench,
# mpigpu-pingpong, mpigpu-proxy, libmpigpu-vcl.so, mpigpu-vclbench, vcl_basic, test_pack,
# dtoracle, pack_basic and this script; env.sh sourced.  Writes OUT/{tests,perf,vcl}.log.
#   device-final.sh [full]  run 9: correctness, structs, ping-pong, the remote path
#   device-final.sh pack    run 10 (after the view rule for GPUs): correctness, the
#                           structs and three paper types against the hand kernel,
#                           all into OUT/perf2.log
set -u
mode=${1:-full}
O=${OUT:-/tmp/out}; mkdir -p $O
export MPIGPU_CACHE_DIR=/tmp/mpigpu-cache MPIGPU_ORACLE_NOEMPTY=1
T=$O/tests.log P=$O/perf.log V=$O/vcl.log
run() { echo "== $*" >> $T; timeout 200 "$@" >> $T 2>&1; echo "rc=$?" >> $T; }
pb() { echo "== $*" >> $P; timeout 150 "$@" >> $P 2>&1; echo "rc=$?" >> $P; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpu.txt 2>&1
structs() {
  for t in struct struct:strided; do
    pb env MPIGPU_VERBOSE=1 mpigpu-packbench -D $t -m 1M:1M -i 2 --methods pack_d2d
    pb mpigpu-packbench -D $t -m 1M:16M -i 20 --methods pack_d2d,hand_d2d
    pb env PERF_HAND_WPI=4 mpigpu-packbench -D $t -m 1M:16M -i 20 --methods pack_d2d,hand_d2d
  done
}
if [ "$mode" = pack ]; then
  P=$O/perf2.log T=$O/perf2.log
  run test_pack; run dtoracle; run pack_basic
  timeout 120 mpigpu-packbench -D vect:64:8 -m 1M:1M -i 2 --methods pack_d2d > $O/warm.log 2>&1
  structs
  for t in vect:512:8 subarray4d indexed:8; do pb mpigpu-packbench -D $t -m 1M:16M -i 20 --methods pack_d2d,hand_d2d; done
  grep -c 'wrong bytes' $P >> $P
  exit 0
fi
run test_pack
run dtoracle
run pack_basic
timeout 120 mpigpu-packbench -D vect:64:8 -m 1M:1M -i 2 --methods pack_d2d > $O/warm.log 2>&1
structs
pb mpigpu-packbench -D struct -m 1M:128M -i 10 --methods pack_d2p,unpack_p2d,read_d2h
pb mpiexec -n 2 mpigpu-pingpong -D vect:64:8 -m 1M:4M -d device:device --baseline rect
# remote path: TCP only (what a proxy on another node uses), default lanes
b=$(cd "$(dirname "$(command -v mpigpu-proxy)")/.." && pwd)
key=$O/key; od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$key"; chmod 600 "$key"
mkdir -p /tmp/vcl-vendors; cp /tmp/ocl-vendors/nvidia.icd /tmp/vcl-vendors/
echo "$b/lib/libmpigpu-vcl.so" > /tmp/vcl-vendors/mpigpu-vcl.icd
for cfg in tcp default; do
  OCL_ICD_VENDORS=/tmp/ocl-vendors mpigpu-proxy --listen 127.0.0.1:0 --key-file "$key" --device NVIDIA > "$O/proxy-$cfg.log" 2>&1 &
  proxy=$!
  for i in $(seq 100); do grep -q "listening on" "$O/proxy-$cfg.log" && break; sleep 0.1; done
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$O/proxy-$cfg.log" | head -1)
  cenv=(); [ $cfg = tcp ] && cenv=(MPIGPU_VCL_SHM=0)
  echo "== $cfg" >> $V
  OCL_ICD_VENDORS=/tmp/ocl-vendors timeout 150 mpigpu-vclbench -n 3 -l 1000 -m 8:256 NVIDIA 2>&1 | sed "s/^/$cfg native /" >> $V
  env "${cenv[@]}" OCL_ICD_VENDORS=/tmp/vcl-vendors MPIGPU_VCL_SERVERS=127.0.0.1:$port MPIGPU_VCL_KEY_FILE=$key MPIGPU_VCL_STATS=1 timeout 150 mpigpu-vclbench -n 3 -l 1000 -m 8:256 "mpigpu virtual" 2>&1 | sed "s/^/$cfg virtual /" >> $V
  [ $cfg = tcp ] && env "${cenv[@]}" OCL_ICD_VENDORS=/tmp/vcl-vendors MPIGPU_VCL_SERVERS=127.0.0.1:$port MPIGPU_VCL_KEY_FILE=$key timeout 120 vcl_basic 2>&1 | tail -2 | sed "s/^/$cfg vcl_basic /" >> $V
  kill -TERM $proxy; wait $proxy
done
grep -c 'wrong bytes' $P >> $T
