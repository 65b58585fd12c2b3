#!/bin/bash
# device-vcl.sh OUTDIR: the remote OpenCL path on a lent GPU machine, from a
# bundle of shared/tools/device-bundle.sh (env.sh sourced) holding
# mpigpu-proxy, libmpigpu-vcl.so and mpigpu-vclbench: a proxy on loopback
# serves the NVIDIA GPU, and the same programs run natively and through
# "mpigpu virtual" in one run.
set -u
out=${1:-.}
mkdir -p "$out"
b=$(cd "$(dirname "$(command -v mpigpu-proxy)")/.." && pwd)
key=$out/key
od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$key"
chmod 600 "$key"
OCL_ICD_VENDORS=/tmp/ocl-vendors mpigpu-proxy --listen 127.0.0.1:0 --key-file "$key" \
    --device NVIDIA > "$out/proxy.log" 2>&1 &
proxy=$!
for i in $(seq 100); do grep -q "listening on" "$out/proxy.log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/proxy.log" | head -1)
echo "proxy pid $proxy port $port"
mkdir -p /tmp/vcl-vendors
cp /tmp/ocl-vendors/nvidia.icd /tmp/vcl-vendors/
echo "$b/lib/libmpigpu-vcl.so" > /tmp/vcl-vendors/mpigpu-vcl.icd
export MPIGPU_VCL_SERVERS=127.0.0.1:$port MPIGPU_VCL_KEY_FILE=$key MPIGPU_CACHE_DIR=/tmp/mpigpu-cache
export OCL_ICD_VENDORS=/tmp/vcl-vendors
run() { # name command...
    local name=$1; shift
    echo "== $name: $*"
    "$@" >"$out/$name.log" 2>&1
    echo "   rc=$?"
    tail -n 12 "$out/$name.log"
}
run clinfo_l clinfo -l
run bench_native mpigpu-vclbench -n 3 -m 1:256 NVIDIA
run bench_virtual mpigpu-vclbench -n 3 -m 1:256 "mpigpu virtual"
run tcp mpigpu-vclbench --tcp-loopback
run setarg1 env MPIGPU_VCL_STATS=1 mpigpu-vclbench --setarg-test 1 "mpigpu virtual"
run setarg1000 env MPIGPU_VCL_STATS=1 mpigpu-vclbench --setarg-test 1000 "mpigpu virtual"
export MPIGPU_ORACLE_NOEMPTY=1
run pack_basic_virtual env MPIGPU_DEVICE="mpigpu virtual" MPIGPU_VERBOSE=1 pack_basic
run oracle_virtual env MPIGPU_DEVICE="mpigpu virtual" MPIGPU_ORACLE_TYPES=300 dtoracle
run packbench_virtual env MPIGPU_DEVICE="mpigpu virtual" MPIGPU_VCL_STATS=1 mpigpu-packbench -D vect:64:8 -m 16M:16M -i 3
run packbench_native env MPIGPU_DEVICE=NVIDIA mpigpu-packbench -D vect:64:8 -m 16M:16M -i 3
# launch + clFinish medians per lane (3 runs each), without a bandwidth phase
# (-m 1:1) and after one up to 256 MiB: which lane, and what before it,
# costs the launch path
for m in 1:1 1:256; do
    for lane in tcp shm default; do
        case $lane in
            tcp) set -- MPIGPU_VCL_SHM=0 ;;
            shm) set -- MPIGPU_VCL_CMA=0 ;;
            default) set -- MPIGPU_VCL_SHM=1 ;;
        esac
        printf '== launch -m %s %-8s' "$m" "$lane"
        for r in 1 2 3; do
            env "$@" mpigpu-vclbench -l 1000 -n 1 -m "$m" "mpigpu virtual" 2>&1 |
                sed -n 's/.*launch + clFinish: median \([0-9.]*\) us.*/ \1/p' | tr -d '\n'
        done
        echo " us"
    done
done
kill -TERM $proxy; wait $proxy; echo "proxy exit $?"; tail -5 "$out/proxy.log"
