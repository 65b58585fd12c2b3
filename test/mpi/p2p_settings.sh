#!/bin/sh
# Point-to-point settings that differ between processes (MPMD): MPI_Init must
# leave mpigpu's device layer off on every process, each saying which
# settings differ, and the program must still run to its end; the same
# settings on both must raise nothing.  Run by make check with MPIEXEC and
# abs_top_builddir in the environment.
prog=$abs_top_builddir/test/mpi/api
mpiexec=${MPIEXEC:-mpiexec}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0
check() { # name, expected count of the message, then the mpiexec arguments
    name=$1 want=$2
    shift 2
    timeout 300 "$mpiexec" "$@" > "$out" 2>&1
    rc=$?
    got=$(grep -c 'differs between processes' "$out")
    # api ends with "No Errors" or "Found N errors": it ran to its end.
    if [ $rc -eq 124 ] || [ "$got" -ne "$want" ] || ! grep -qi ' errors$' "$out"; then
        echo "p2p_settings: $name: exit $rc, $got messages where $want were expected:"
        cat "$out"
        fail=1
    else
        echo "p2p_settings: $name: $got messages, as expected"
    fi
}
check "protocol plain against auto" 2 \
    -n 1 env MPIGPU_P2P_PROTOCOL=plain "$prog" : -n 1 "$prog"
check "first piece 16K against 64K" 2 \
    -n 1 env MPIGPU_P2P_FIRST=16K "$prog" : -n 1 "$prog"
check "pool of 64K against the default" 2 \
    -n 1 env MPIGPU_STAGING_MAX=64K "$prog" : -n 1 "$prog"
check "the same settings" 0 \
    -n 1 env MPIGPU_P2P_FIRST=16K "$prog" : -n 1 env MPIGPU_P2P_FIRST=16K "$prog"
# Where a process has no device layer, the device calls fail as without a
# device: api.c then reports its errors, which this test does not judge.
exit $fail
