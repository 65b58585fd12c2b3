#!/bin/bash
# hostbench.sh: host traffic plain against through the library (issue 31).
# Runs test/perf/hostbench as it is and under LD_PRELOAD=libmpigpu.so, one
# after the other (plain, preload, plain, preload, ...: ROUNDS rounds), and
# prints per size each run's value, the ratio preload/plain of the rounds'
# medians (one slow round among three does not move it), and "OUT" where
# that ratio is more than TOL percent from 1.
#
#   test/perf/hostbench.sh [-q] [-r ROUNDS] [BENCH...]
#
# Benches: lat, bw1, bw4, bw64 (osu_bw with windows of 1, 4, 64), allreduce
# (on NP_ALLREDUCE ranks, default 4), isendrecv (MPI_Isendrecv, which the
# library serves itself on host buffers); default the first five.  -q: tiny sizes and
# iterations (tries the runner in seconds, measures nothing); -r: rounds
# (default 2).
#
# Environment: HOSTBENCH (the program; default hostbench on PATH, else the
# build tree's test/perf/hostbench), MPIGPU_LIB (the library to preload;
# default libmpigpu.so.0 in the lib/ beside the program's bin/, as in a
# bundle, else the build tree's .libs/libmpigpu.so; may be a list for
# LD_PRELOAD), MPIEXEC (default
# mpiexec), MPIEXEC_ARGS (its options, e.g. "-bind-to core" for MPICH's
# hydra), TOL (percent, default 3), HB_ARGS (more arguments for every run,
# e.g. "-m 1:64K"), PRELOAD_ENV (VAR=VALUE words set in the preloaded runs
# only, e.g. MPIGPU_P2P_PROTOCOL=plain).  The exit status is non-zero only
# when a run fails or prints no rows, never for a ratio.
set -u
quick=0 rounds=2
while getopts qr: o; do
    case $o in
    q) quick=1 ;;
    r) rounds=$OPTARG ;;
    *) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- lat bw1 bw4 bw64 allreduce

top=$(cd "$(dirname "$0")/../.." && pwd)
prog=${HOSTBENCH:-$(command -v hostbench || echo "$top/test/perf/hostbench")}
[ -x "$prog" ] || { echo "hostbench.sh: no program $prog (make check TESTS=)" >&2; exit 2; }
if [ -z "${MPIGPU_LIB:-}" ]; then
    MPIGPU_LIB=$(dirname "$prog")/../lib/libmpigpu.so.0
    [ -f "$MPIGPU_LIB" ] || MPIGPU_LIB=$top/.libs/libmpigpu.so
fi
for w in $MPIGPU_LIB; do # (a sanitizer build preloads its runtimes first)
    [ -f "$w" ] || { echo "hostbench.sh: no library $w" >&2; exit 2; }
done
mpiexec=${MPIEXEC:-mpiexec}
TOL=${TOL:-3}
NP_ALLREDUCE=${NP_ALLREDUCE:-4}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

echo "# hostbench.sh: $(uname -n), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
    "$rounds rounds, tolerance $TOL%"
echo "# program $prog, library $MPIGPU_LIB, mpiexec $(command -v "$mpiexec") ${MPIEXEC_ARGS:-}"
[ -n "${PRELOAD_ENV:-}" ] && echo "# preloaded runs also with: $PRELOAD_ENV"

args_of() { # BENCH: ranks, then the program's arguments
    local q=
    [ $quick = 1 ] && q="-m 1:128K -i 5 -x 1 -I 2 -X 1"
    case $1 in
    lat) echo "2 lat $q" ;;
    bw1) echo "2 bw -W 1 $q" ;;
    bw4) echo "2 bw -W 4 $q" ;;
    bw64) echo "2 bw -W 64 $q" ;;
    allreduce) echo "$NP_ALLREDUCE allreduce $q" ;;
    isendrecv) echo "2 isendrecv $q" ;;
    *) return 1 ;;
    esac
}
for b in "$@"; do
    args_of "$b" >/dev/null || { echo "hostbench.sh: no bench $b" >&2; exit 2; }
done

fails=0
# run BENCH SIDE ROUND: one run, its rows (size,value) in tmp/BENCH.SIDE.ROUND
run() {
    local a np out=$tmp/$1.$2.$3 pre=()
    a=$(args_of "$1")
    np=${a%% *}
    # shellcheck disable=SC2206
    [ "$2" = preload ] && pre=(env LD_PRELOAD="$MPIGPU_LIB" ${PRELOAD_ENV:-})
    # shellcheck disable=SC2086
    if ! timeout 600 "$mpiexec" ${MPIEXEC_ARGS:-} -n "$np" "${pre[@]}" "$prog" ${a#* } ${HB_ARGS:-} --csv \
        >"$out.raw" 2>"$out.err"; then
        echo "# FAILED: $1 $2 round $3: $(tail -n 3 "$out.err" | tr '\n' ' ')"
        fails=$((fails + 1))
    fi
    grep -E '^[0-9]+,' "$out.raw" >"$out"
    if [ ! -s "$out" ]; then
        echo "# FAILED: $1 $2 round $3 printed no rows"
        fails=$((fails + 1))
    fi
    # the preloaded run must have the library in the process, the plain one not
    local want=no
    [ "$2" = preload ] && want=yes
    if ! grep -q "^# libmpigpu: $want" "$out.raw"; then
        echo "# FAILED: $1 $2 round $3: expected '# libmpigpu: $want'"
        fails=$((fails + 1))
    fi
}

for r in $(seq "$rounds"); do
    for b in "$@"; do
        run "$b" plain "$r"
        run "$b" preload "$r"
    done
done

for b in "$@"; do
    unit=us
    case $b in bw*) unit=MB/s ;; esac
    echo
    echo "# $b ($unit): $(args_of "$b" | cut -d' ' -f1) ranks, hostbench $(args_of "$b" | cut -d' ' -f2-) ${HB_ARGS:-}"
    files=()
    for r in $(seq "$rounds"); do files+=("$tmp/$b.plain.$r" "$tmp/$b.preload.$r"); done
    # One row per size: plain and preload of each round, ratio of the means.
    awk -F, -v rounds="$rounds" -v tol="$TOL" '
        # the median of a[1..n] (sorts a)
        function median(a, n,    i, j, t) {
            for (i = 2; i <= n; i++)
                for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        FNR == 1 { f++ }
        { v[$1, f] = $2; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
        END {
            printf "%-10s", "# size"
            for (r = 1; r <= rounds; r++) printf " %12s %12s", "plain" r, "preload" r
            printf " %8s\n", "ratio"
            out = 0
            for (i = 1; i <= n; i++) {
                s = order[i]; np = 0; nq = 0
                printf "%-10s", s
                for (f = 1; f <= 2 * rounds; f++) {
                    if ((s, f) in v) {
                        printf " %12.2f", v[s, f]
                        if (f % 2) P[++np] = v[s, f]; else Q[++nq] = v[s, f]
                    } else printf " %12s", "-"
                }
                mp = median(P, np); mq = median(Q, nq)
                if (np && nq && mp > 0) {
                    ratio = mq / mp
                    flag = (ratio > 1 + tol / 100 || ratio < 1 - tol / 100) ? "  OUT" : ""
                    out += flag != ""
                    printf " %8.3f%s\n", ratio, flag
                } else printf " %8s\n", "-"
            }
            printf "# %d of %d sizes outside %s%%\n", out, n, tol
        }' "${files[@]}"
done
[ $fails = 0 ]
