#!/bin/bash
# The project's own tests on a virtual device: test/mpi/api, pack_basic,
# dtoracle (MPIGPU_ORACLE_TYPES=200) and shared (page protection) with MPIGPU_DEVICE="mpigpu virtual", and
# test/unit/test_pack (which takes platform 0) with only the virtual platform
# in the ICD vendors directory, all against a proxy serving PoCL.
# Each must pass, and must have run on the virtual platform: the MPI tests'
# MPIGPU_VERBOSE=1 device line names it, and the ICD's MPIGPU_VCL_STATS=1 line
# shows messages went to the proxy.
#
#   mpigpu-over-vcl.sh [virtual|native] [TEST...]
# "native" runs the same on PoCL directly (MPIGPU_DEVICE=Portable).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=proxy-env.sh
. "$here/proxy-env.sh"

mode=virtual
case ${1:-} in virtual | native) mode=$1; shift ;; esac
[ "$mode" = native ] || { mgvcl_skip_unless_built || exit 77; }
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(api pack_basic dtoracle test_pack shared)
limit=${MPIGPU_TEST_TIMEOUT:-900}
out=$(mktemp -d "${TMPDIR:-/tmp}/mpigpu-over-vcl.XXXXXX") || exit 1
MGVCL_EXIT_HOOK='rm -rf "$out"'
trap "$MGVCL_EXIT_HOOK" EXIT

mgvcl_start "$mode" || exit 1
if [ "$mode" = virtual ]; then device="mpigpu virtual"; else device=Portable; fi
bad=0
for t in "${tests[@]}"; do
    log=$out/$t.log
    t0=$SECONDS
    case $t in
        test_pack)
            # Platform 0 is the virtual one: its vendors directory lists no other.
            OCL_ICD_VENDORS=$MGVCL_ONLY_VENDORS MPIGPU_VCL_STATS=1 \
                timeout "$limit" "$MGVCL_BUILDDIR/test/unit/test_pack" >"$log" 2>&1
            ;;
        *)
            env=(MPIGPU_DEVICE="$device" MPIGPU_VERBOSE=1 MPIGPU_VCL_STATS=1)
            [ "$t" = dtoracle ] && env+=(MPIGPU_ORACLE_TYPES=200)
            timeout "$limit" "${MPIEXEC:-mpiexec}" -n 1 env "${env[@]}" \
                "$MGVCL_BUILDDIR/test/mpi/$t" >"$log" 2>&1
            ;;
    esac
    rc=$?
    why=
    if [ $rc -ne 0 ]; then
        why="exit status $rc"
    elif [ "$t" != test_pack ] && ! grep -q "of platform \"$MGVCL_PLATFORM\"" "$log"; then
        why="did not run on platform \"$MGVCL_PLATFORM\" (no MPIGPU_VERBOSE device line naming it)"
    elif [ "$t" = shared ] && [ "$mode" = virtual ] && ! grep -q "page protection" "$log"; then
        # a remote device fails the zero-copy probe: shared memory must
        # take the page-protection path there (doc/design.md)
        why="shared memory did not use page protection on the virtual device"
    elif [ "$mode" = virtual ] && ! grep -q '^mpigpu-vcl: messages=[1-9]' "$log"; then
        why="no 'mpigpu-vcl: messages=N' line with N > 0: the virtual platform was not used"
    fi
    stats=$(grep '^mpigpu-vcl: messages=' "$log" | tail -n 1)
    if [ -n "$why" ]; then
        echo "mpigpu-over-vcl: FAIL: $t: $why ($((SECONDS - t0)) s); its output:"
        tail -n 40 "$log" | sed 's/^/  /'
        bad=1
    else
        echo "mpigpu-over-vcl: PASS: $t on \"$MGVCL_PLATFORM\" ($((SECONDS - t0)) s) ${stats#mpigpu-vcl: }"
    fi
done
[ $bad -eq 0 ] || mgvcl_proxy_log
mgvcl_stop || exit 1
exit $bad
