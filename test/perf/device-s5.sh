#!/bin/bash
# device-s5.sh: session 5's runs on the H100 (doc/performance.md, "Session 5"), from a
# bundle of shared/tools/device-bundle.sh with env.sh sourced.  Output in OUT.
#   device-s5.sh cma    the one-copy lane from 1 to 128 MiB, three rounds: native, then
#                       the proxy with MPIGPU_PROXY_CMA_COPY=auto and map, native
#                       before each (S5-2 ran pinned, map and staging; S5-3 auto,
#                       pinned and map, with pinned cut in quarter pieces); BEST,
#                       SIZES and METHODS change the defaults 5, 1:128 and "auto map"
#                       (S5-9: BEST=20 SIZES=1:256 METHODS=auto)
#   device-s5.sh poll   S5-4's experiment (see below)
#   device-s5.sh eight  8 and 16 MiB, ten rounds of native and the default lanes
#   device-s5.sh tcp    the TCP lane alone with 1 to 8 stripes (a bundle of tcpms2)
#   device-s5.sh check  correctness on the GPU: vcl_basic over TCP and the default
#                       lanes, also against a proxy whose callbacks send nothing
#                       (MPIGPU_PROXY_TEST_DROP_CALLBACKS=1), and launch + clFinish
set -u
mode=${1:-cma}
O=${OUT:-/tmp/out}; mkdir -p $O
P=$O/$mode.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpu.txt 2>&1
nproc >> $O/gpu.txt; grep -m1 'model name' /proc/cpuinfo >> $O/gpu.txt
. "$(dirname "$0")/device-vcl-lib.sh"
vcl_setup
nat() { OCL_ICD_VENDORS=/tmp/ocl-vendors timeout 150 "$@"; }
vir() { env OCL_ICD_VENDORS=/tmp/vcl-vendors MPIGPU_VCL_SERVERS=127.0.0.1:$port MPIGPU_VCL_KEY_FILE=$key timeout 150 "$@"; }
if [ $mode = cma ]; then
  for r in 1 2 3; do
    for c in ${METHODS:-auto map}; do
      echo "== round $r native" >> $P
      nat mpigpu-vclbench -n ${BEST:-5} -l 10 -m ${SIZES:-1:128} NVIDIA 2>&1 | grep MiB >> $P
      start_proxy "$O/proxy-$c.log" MPIGPU_PROXY_CMA_COPY=$c
      echo "== round $r virtual, MPIGPU_PROXY_CMA_COPY=$c" >> $P
      vir mpigpu-vclbench -n ${BEST:-5} -l 10 -m ${SIZES:-1:128} "mpigpu virtual" 2>&1 | grep MiB >> $P
      stop_proxy
    done
  done
  exit 0
fi
if [ $mode = poll ]; then
  # S5-4, an experiment: MPIGPU_PROXY_POLL_US 0 (block in clWaitForEvents at
  # once) against 2000 (poll the event's status first), for each copy method
  # and lane, pinned in quarter pieces (MPIGPU_PROXY_PIN_DIV=4) or whole.
  # Both settings existed only in that build; polling did not help and was
  # not kept.
  for r in 1 2; do
    echo "== round $r native" >> $P
    nat mpigpu-vclbench -n 5 -l 10 -m 1:64 NVIDIA 2>&1 | grep MiB >> $P
    for poll in 0 2000; do
      for c in staging pinned:4 pinned:1 map; do
        start_proxy "$O/proxy-$c-$poll.log" MPIGPU_PROXY_POLL_US=$poll MPIGPU_PROXY_CMA_COPY=${c%%:*} MPIGPU_PROXY_PIN_DIV=${c#*:}
        echo "== round $r virtual, poll $poll, MPIGPU_PROXY_CMA_COPY=$c" >> $P
        vir mpigpu-vclbench -n 5 -l 10 -m 1:64 "mpigpu virtual" 2>&1 | grep MiB >> $P
        if [ $c = map ]; then
          echo "== round $r virtual, poll $poll, shm lane, MPIGPU_VCL_CMA=0" >> $P
          vir env MPIGPU_VCL_CMA=0 mpigpu-vclbench -n 5 -l 10 -m 1:64 "mpigpu virtual" 2>&1 | grep MiB >> $P
          echo "== round $r virtual, poll $poll, tcp, MPIGPU_VCL_SHM=0" >> $P
          vir env MPIGPU_VCL_SHM=0 mpigpu-vclbench -n 5 -l 10 -m 1:64 "mpigpu virtual" 2>&1 | grep MiB >> $P
        fi
        stop_proxy
      done
    done
  done
  exit 0
fi
if [ $mode = eight ]; then
  # 8 and 16 MiB, ten rounds of native then the default lanes: one proxy for
  # all (S5-6), or with FRESH=1 a new proxy each round (S5-7); BEST: best of
  # how many transfers (default 5; S5-8 ran 20)
  [ "${FRESH:-0}" = 1 ] || start_proxy "$O/proxy-eight.log"
  for r in $(seq 10); do
    echo "== round $r native" >> $P
    nat mpigpu-vclbench -n ${BEST:-5} -l 10 -m 8:16 NVIDIA 2>&1 | grep MiB >> $P
    [ "${FRESH:-0}" = 1 ] && start_proxy "$O/proxy-eight-$r.log"
    echo "== round $r virtual, MPIGPU_PROXY_CMA_COPY=auto" >> $P
    vir mpigpu-vclbench -n ${BEST:-5} -l 10 -m 8:16 "mpigpu virtual" 2>&1 | grep MiB >> $P
    [ "${FRESH:-0}" = 1 ] && stop_proxy
  done
  [ "${FRESH:-0}" = 1 ] || stop_proxy
  exit 0
fi
if [ $mode = tcp ]; then
  # The TCP bulk lane alone (MPIGPU_VCL_SHM=0), 1, 2, 4 and 8 stripes
  # (MPIGPU_VCL_STREAMS; a bundle of branch tcpms2), native before each
  start_proxy "$O/proxy-tcp.log"
  for r in 1 2; do
    for n in 1 2 4 8; do
      echo "== round $r native" >> $P
      nat mpigpu-vclbench -n ${BEST:-10} -l 10 -m 8:256 NVIDIA 2>&1 | grep MiB >> $P
      echo "== round $r virtual, tcp, MPIGPU_VCL_STREAMS=$n" >> $P
      vir env MPIGPU_VCL_SHM=0 MPIGPU_VCL_STREAMS=$n mpigpu-vclbench -n ${BEST:-10} -l 10 -m 8:256 "mpigpu virtual" 2>&1 | grep MiB >> $P
    done
  done
  echo "== launch + clFinish (us) native / tcp 1 / tcp 4 / default lanes" >> $P
  med() { sed -n 's/.*median \([0-9.]*\) us.*/\1/p' | head -1; }
  for r in 1 2 3; do
    echo "$(nat mpigpu-vclbench -l 1000 -n 1 -m 1:1 NVIDIA 2>&1 | med) / $(vir env MPIGPU_VCL_SHM=0 MPIGPU_VCL_STREAMS=1 mpigpu-vclbench -l 1000 -n 1 -m 1:1 "mpigpu virtual" 2>&1 | med) / $(vir env MPIGPU_VCL_SHM=0 MPIGPU_VCL_STREAMS=4 mpigpu-vclbench -l 1000 -n 1 -m 1:1 "mpigpu virtual" 2>&1 | med) / $(vir mpigpu-vclbench -l 1000 -n 1 -m 1:1 "mpigpu virtual" 2>&1 | med)" >> $P
  done
  echo "== vcl_basic tcp 4 stripes" >> $P; vir env MPIGPU_VCL_SHM=0 MPIGPU_VCL_STREAMS=4 vcl_basic >> $P 2>&1; echo "rc=$?" >> $P
  echo "== vcl_basic default" >> $P; vir vcl_basic >> $P 2>&1; echo "rc=$?" >> $P
  stop_proxy
  grep -E "stripes|FINISH" $O/proxy-tcp.log | tail -4 >> $P
  exit 0
fi
if [ $mode = check ]; then
  med() { sed -n 's/.*median \([0-9.]*\) us.*/\1/p' | head -1; }
  start_proxy "$O/proxy.log"
  for r in 1 2 3; do
    echo "launch + clFinish median (us) native / tcp / lanes: $(nat mpigpu-vclbench -l 1000 -n 1 -m 1:1 NVIDIA 2>&1 | med) / $(vir env MPIGPU_VCL_SHM=0 mpigpu-vclbench -l 1000 -n 1 -m 1:1 "mpigpu virtual" 2>&1 | med) / $(vir mpigpu-vclbench -l 1000 -n 1 -m 1:1 "mpigpu virtual" 2>&1 | med)" >> $P
  done
  echo "== vcl_basic tcp" >> $P; vir env MPIGPU_VCL_SHM=0 vcl_basic >> $P 2>&1; echo "rc=$?" >> $P
  echo "== vcl_basic default" >> $P; vir vcl_basic >> $P 2>&1; echo "rc=$?" >> $P
  stop_proxy
  start_proxy "$O/proxy-drop.log" MPIGPU_PROXY_TEST_DROP_CALLBACKS=1
  echo "== vcl_basic tcp, no callbacks" >> $P; vir env MPIGPU_VCL_SHM=0 vcl_basic >> $P 2>&1; echo "rc=$?" >> $P
  echo "== vcl_basic default, no callbacks" >> $P; vir vcl_basic >> $P 2>&1; echo "rc=$?" >> $P
  stop_proxy
  grep FINISH $O/proxy.log $O/proxy-drop.log >> $P
  exit 0
fi
echo "unknown mode $mode" >&2; exit 2
