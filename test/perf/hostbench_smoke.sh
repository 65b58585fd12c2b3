#!/bin/sh
# Smoke test of the host-only benchmark (not timed): test/perf/hostbench.sh
# in quick mode, one round, every bench (lat, windows of 1, 4 and 64,
# allreduce on 4 ranks), so hostbench runs once per mode plain and once under
# LD_PRELOAD=libmpigpu.so, with sizes up to 128 KiB (host receives from 64
# KiB up go through the library).  Passes when every run completes, says
# whether the library is loaded as it should (the runner checks), and each
# table has a row with both sides' values for every size.  No timing is judged.
# Run by make check with MPIEXEC and abs_top_builddir in the environment.
set -u
lib=$abs_top_builddir/.libs/libmpigpu.so
if [ ! -f "$lib" ]; then
    echo "hostbench_smoke: $lib not built (--disable-shared?)"
    exit 77
fi
rt() { ldd "$lib" | awk -v n="$1" '$1 ~ n {print $3}'; }
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
preload="$(rt libasan) $(rt libubsan) $lib"
HOSTBENCH=$abs_top_builddir/test/perf/hostbench MPIGPU_LIB=$preload \
    timeout 600 "${srcdir:-.}/test/perf/hostbench.sh" -q -r 1 >"$out" 2>&1
rc=$?
cat "$out"
[ $rc = 0 ] || { echo "hostbench_smoke: hostbench.sh failed (rc=$rc)"; exit 1; }
# Rows per table: sizes 1 B (allreduce 8 B) to 128 KiB; each row "size
# plain preload ratio" with a number for each side (a missing value is "-").
# Values are not judged: a tiny bandwidth may print as 0.00 on a busy machine.
awk -v num='^[0-9]+[.][0-9]+$' '
    /^# [a-z0-9]+ \(/ { t = $2; want[t] = (t == "allreduce") ? 15 : 18; next }
    /^#/ || NF == 0 { next }
    t != "" {
        if (NF < 4 || $2 !~ num || $3 !~ num) { print "bad row in " t ": " $0; bad++ }
        rows[t]++
    }
    END {
        n = 0
        for (t in want) {
            n++
            if (rows[t] != want[t]) { print t ": " rows[t] + 0 " rows, want " want[t]; bad++ }
        }
        if (n != 5) { print n " tables, want 5"; bad++ }
        exit bad > 0
    }' "$out" || { echo "hostbench_smoke: FAIL"; exit 1; }
echo "hostbench_smoke: OK"
