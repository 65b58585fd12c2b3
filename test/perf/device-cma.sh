#!/bin/bash
# device-cma.sh OUT: one-copy lane against the shm lane on the GPU (bundle of branch cma)
# From a bundle of shared/tools/device-bundle.sh (env.sh sourced) holding
# mpigpu-proxy, libmpigpu-vcl.so, mpigpu-vclbench and vcl_basic (this script
# too): for each configuration a proxy on loopback serves the NVIDIA GPU and
# mpigpu-vclbench -n 3 -m 1:256 runs natively, then through "mpigpu virtual"
# (MPIGPU_VCL_STATS=1); vcl_basic checks the data on the one-copy lane.
# Configurations: shm (MPIGPU_VCL_CMA=0), cma-auto (the default), shm2 and
# cma-auto2 (repeats), cma-staging (MPIGPU_PROXY_CMA_COPY=staging),
# cma-auto-t3 (MPIGPU_PROXY_CMA_THREADS=3).  Proxy logs go to OUT.
set -u
out=${1:-.}; mkdir -p "$out"
b=$(cd "$(dirname "$(command -v mpigpu-proxy)")/.." && pwd)
key=$out/key; od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$key"; chmod 600 "$key"
mkdir -p /tmp/vcl-vendors; cp /tmp/ocl-vendors/nvidia.icd /tmp/vcl-vendors/
echo "$b/lib/libmpigpu-vcl.so" > /tmp/vcl-vendors/mpigpu-vcl.icd
cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null | sed 's/^/yama ptrace_scope /'
grep -o '\[[a-z]*\]' /sys/kernel/mm/transparent_hugepage/enabled | sed 's/^/thp /'
nproc
for cfg in shm cma-auto shm2 cma-auto2 cma-staging cma-auto-t3; do
  penv=(); cenv=()
  case $cfg in
    shm|shm2) cenv=(MPIGPU_VCL_CMA=0) ;;
    cma-auto-t3) penv=(MPIGPU_PROXY_CMA_THREADS=3) ;;
    cma-staging) penv=(MPIGPU_PROXY_CMA_COPY=staging) ;;
  esac
  env "${penv[@]}" OCL_ICD_VENDORS=/tmp/ocl-vendors mpigpu-proxy --listen 127.0.0.1:0 --key-file "$key" --device NVIDIA > "$out/proxy-$cfg.log" 2>&1 &
  proxy=$!
  for i in $(seq 100); do grep -q "listening on" "$out/proxy-$cfg.log" && break; sleep 0.1; done
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/proxy-$cfg.log" | head -1)
  echo "== $cfg"
  OCL_ICD_VENDORS=/tmp/ocl-vendors mpigpu-vclbench -n 3 -m 1:256 NVIDIA 2>&1 | grep -E ",(write|read)," | sed "s/^/$cfg native /"
  env "${cenv[@]}" OCL_ICD_VENDORS=/tmp/vcl-vendors MPIGPU_VCL_SERVERS=127.0.0.1:$port MPIGPU_VCL_KEY_FILE=$key MPIGPU_VCL_STATS=1 mpigpu-vclbench -n 3 -m 1:256 "mpigpu virtual" 2>&1 | grep -E ",(write|read),|mpigpu-vcl:" | sed "s/^/$cfg virtual /"
  if [ $cfg = cma-auto ] || [ $cfg = cma-map ]; then
    env OCL_ICD_VENDORS=/tmp/vcl-vendors MPIGPU_VCL_SERVERS=127.0.0.1:$port MPIGPU_VCL_KEY_FILE=$key timeout 120 vcl_basic 2>&1 | tail -2 | sed "s/^/$cfg vcl_basic /"
  fi
  kill -TERM $proxy; wait $proxy
  grep -E "lane|one-copy|failed" "$out/proxy-$cfg.log" | sed "s/^/$cfg proxy: /" | head -8
done
