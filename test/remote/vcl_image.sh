#!/bin/bash
# Images and samplers through "mpigpu virtual" (test/remote/vcl_image.c):
# the host's results and the native PoCL platform's values, with a proxy of
# its own; then on the TCP lane (no shared memory) with 3 stripes, where a
# 2 MiB image's chunks spread over them.
. "$(dirname "$0")/common.sh"
# The program also drives the native PoCL platform in its own process, to
# compare: PoCL 3.1 keeps a few allocations of its contexts and 1D buffer
# images (2,644 bytes in 12 blocks, all under libpocl), which a sanitizer
# build's LeakSanitizer would report.  Those alone are not judged
# (pocl-lsan.supp).
. "$(dirname "$0")/lsan-use.sh"
lsan_use "$(dirname "$0")/pocl-lsan.supp" "$work/lsan.supp"
start_proxy px
timeout 300 "$top/test/remote/vcl_image" || fail "vcl_image"
MPIGPU_VCL_SHM=0 MPIGPU_VCL_STREAMS=3 timeout 300 "$top/test/remote/vcl_image" ||
    fail "vcl_image, TCP lane, 3 stripes"
stop_proxy "$PROXY_PID"
echo "PASS"
