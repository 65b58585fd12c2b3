#!/bin/bash
# Images and samplers through "mpigpu virtual" (test/remote/vcl_image.c):
# the host's results and the native PoCL platform's values, with a proxy of
# its own; then the same on the stream lane (no shared memory).
. "$(dirname "$0")/common.sh"
start_proxy px
timeout 300 "$top/test/remote/vcl_image" || fail "vcl_image"
MPIGPU_VCL_SHM=0 timeout 300 "$top/test/remote/vcl_image" || fail "vcl_image, stream lane"
stop_proxy "$PROXY_PID"
echo "PASS"
