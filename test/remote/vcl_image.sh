#!/bin/bash
# Images and samplers through "mpigpu virtual" (test/remote/vcl_image.c):
# the host's results and the native PoCL platform's values, with a proxy of
# its own; then on the TCP lane (no shared memory) with 3 stripes, where a
# 2 MiB image's chunks spread over them.
. "$(dirname "$0")/common.sh"
start_proxy px
timeout 300 "$top/test/remote/vcl_image" || fail "vcl_image"
MPIGPU_VCL_SHM=0 MPIGPU_VCL_STREAMS=3 timeout 300 "$top/test/remote/vcl_image" ||
    fail "vcl_image, TCP lane, 3 stripes"
stop_proxy "$PROXY_PID"
echo "PASS"
