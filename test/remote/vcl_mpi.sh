#!/bin/bash
# The project's own MPI tests on the remote device: MPIGPU_DEVICE="mpigpu
# virtual" through a proxy serving PoCL, so the pack kernels run on the
# proxy's device and only packed bytes cross.
. "$(dirname "$0")/common.sh"
start_proxy px
export MPIGPU_DEVICE="mpigpu virtual" MPIGPU_VCL_STATS=1
run() {
    local name=$1; shift
    env "$@" timeout 600 "${MPIEXEC:-mpiexec}" -n 1 "$top/test/mpi/$name" >"$work/$name.out" 2>&1
    local rc=$?
    tail -n 3 "$work/$name.out"
    [ $rc -eq 0 ] || { cat "$work/$name.out"; fail "$name on the virtual device (exit $rc)"; }
    grep -q 'of platform "mpigpu virtual"' "$work/$name.out" || fail "$name did not use the virtual device"
    grep -q '^mpigpu-vcl: messages=[1-9]' "$work/$name.out" || fail "$name: no remote traffic"
}
run pack_basic MPIGPU_VERBOSE=1
run dtoracle MPIGPU_VERBOSE=1 MPIGPU_ORACLE_TYPES=200 MPIGPU_ORACLE_SEED=5
grep -q "No Errors" "$work/pack_basic.out" || fail "pack_basic did not report No Errors"
grep -q " 0 failed" "$work/dtoracle.out" || fail "dtoracle reported failures"
stop_proxy "$PROXY_PID"
echo "PASS"
