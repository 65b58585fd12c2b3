#!/bin/sh
# An unmodified MPI binary (test/mpi/p2p_preload, not linked with libmpigpu)
# on 2 ranks: as it is, then with LD_PRELOAD=libmpigpu.so, which must give the
# same host results and add the device cases.  Run by make check with
# MPIEXEC and abs_top_builddir in the environment.
set -e
prog=$abs_top_builddir/test/mpi/p2p_preload
lib=$abs_top_builddir/.libs/libmpigpu.so
if [ ! -f "$lib" ]; then
    echo "p2p_preload: $lib not built (--disable-shared?)"
    exit 77
fi
mpiexec=${MPIEXEC:-mpiexec}
# A sanitizer build's library needs the sanitizer runtimes loaded first (ASan
# first of all), as for any instrumented library preloaded into an
# uninstrumented program.
rt() { ldd "$lib" | awk -v n="$1" '$1 ~ n {print $3}'; }
preload=$(echo $(rt libasan) $(rt libubsan) "$lib")
timeout 300 "$mpiexec" -n 2 "$prog" plain
timeout 300 "$mpiexec" -n 2 env LD_PRELOAD="$preload" "$prog" preload
