#!/bin/bash
# The piglit OpenCL tests (Debian's piglit package) against one platform, and
# the comparison of two such runs.
#
#   piglit-cl.sh run [-j JOBS] [-t SECONDS] [-s all|ci] PLATFORM OUTDIR
#       Runs every cl-api-*, cl-custom-* and cl-program-* binary, and
#       cl-program-tester over the program tests that piglit's cl.xml lists
#       (tests/cl/program, generated_tests/cl), with PIGLIT_CL_PLATFORM=PLATFORM
#       (piglit's own platform selection: the first platform whose name
#       contains PLATFORM).  Writes OUTDIR/results.txt ("NAME<TAB>RESULT",
#       sorted), OUTDIR/logs/NAME.log and OUTDIR/summary.txt.  RESULT is
#       piglit's (pass, fail, skip, warn), or crash (no result line, or
#       killed by a signal) or timeout (over SECONDS, default 60).
#       -s ci and -s api run subsets (see list_tests below).
#   piglit-cl.sh compare NATIVE_DIR VIRTUAL_DIR XFAIL_FILE
#       Fails unless every test has the same result in both runs, except
#       tests named in XFAIL_FILE ("NAME  # reason" lines).
#   piglit-cl.sh [check]
#       make check: the native PoCL run, then the same tests through
#       "mpigpu virtual" under proxy-env.sh, then compare; results and logs
#       stay in test/remote/piglit-out/{native,virtual}.  MPIGPU_PIGLIT_SUBSET
#       (ci, api or all) and MPIGPU_PIGLIT_JOBS (2) change the set and the jobs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
PIGLIT=${PIGLIT_DIR:-/usr/lib/x86_64-linux-gnu/piglit}

die() {
    echo "piglit-cl: $*" >&2
    exit 1
}

# The test list: "NAME<TAB>COMMAND..." lines.  Binaries are globbed (so that
# cl-custom-use-sub-buffer-in-kernel, missing from cl.xml, runs too; the EGL
# interop test is left out: no EGL here); program tests come from cl.xml.
# SUBSET ci (make check): every binary (the API and custom tests: they
# exercise the forwarding path most), every program/build test (22), every
# 4th program/execute test (50 of 200) and every 20th generated one (22 of
# 438: builtin, store, vload, vstore, which test PoCL's compiler far more than
# the path to it).  The full set takes ~10 min natively on this 2-core VM,
# too much for CI twice over; the ci subset ~2 min.  SUBSET api (the
# sanitizer build's default, where every piglit process runs under ASan and
# the ci subset took 20 min): the binaries and the program/build tests only.
list_tests() {
    local subset=$1 b ne=0 ng=0 f
    for b in "$PIGLIT"/bin/cl-api-* "$PIGLIT"/bin/cl-custom-* "$PIGLIT"/bin/cl-program-*; do
        b=${b##*/}
        [ "$b" = cl-program-tester ] && continue
        printf '%s\t%s\n' "$b" "$b"
    done
    zcat "$PIGLIT/tests/cl.xml.gz" |
        grep -o "name=\"filename\" value=\"'[^']*'" | sed "s/.*value=\"'//; s/'\$//" |
        while read -r f; do
            if [ "$subset" = api ]; then
                case $f in
                    tests/cl/program/execute/* | generated_tests/*) continue ;;
                esac
            elif [ "$subset" = ci ]; then
                case $f in
                    tests/cl/program/execute/*)
                        ne=$((ne + 1))
                        [ $((ne % 4)) -eq 1 ] || continue ;;
                    generated_tests/*)
                        ng=$((ng + 1))
                        [ $((ng % 20)) -eq 1 ] || continue ;;
                esac
            fi
            printf '%s\t%s\n' "$f" "cl-program-tester $f"
        done
}

# One test: run_one PLATFORM OUTDIR TIMEOUT NAME COMMAND...
run_one() {
    local platform=$1 out=$2 tmo=$3 name=$4 log rc res t0
    shift 4
    t0=$(date +%s.%N)
    log=$out/logs/$(echo "$name" | tr '/' '_').log
    # The start time, to match the proxy log's timestamps.
    echo "# $name: started $(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" >"$log"
    (cd "$PIGLIT" && PIGLIT_CL_PLATFORM=$platform ${MGVCL_EXT:-} timeout -k 5 "$tmo" "$PIGLIT/bin/$1" "${@:2}") \
        >>"$log" 2>&1 </dev/null
    rc=$?
    res=$(sed -n 's/^PIGLIT: {"result": "\([a-z]*\)".*/\1/p' "$log" | tail -n 1)
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        res=timeout
    elif [ $rc -ge 128 ] || [ -z "$res" ]; then
        res=crash
    fi
    echo "# exit status $rc, result $res" >>"$log"
    printf '%s\t%s\t%s\n' "$name" "$res" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')"
}

summarize() {
    local r c
    for r in pass fail skip warn crash timeout; do
        c=$(awk -F'\t' -v r=$r '$2 == r' "$1/results.txt" | wc -l)
        printf '%s=%s ' $r "$c"
    done
    printf 'total=%s\n' "$(wc -l <"$1/results.txt")"
}

cmd_run() {
    local jobs=2 tmo=60 subset=all opt
    OPTIND=1
    while getopts j:t:s: opt; do
        case $opt in
            j) jobs=$OPTARG ;;
            t) tmo=$OPTARG ;;
            s) subset=$OPTARG ;;
            *) die "bad option" ;;
        esac
    done
    shift $((OPTIND - 1))
    [ $# -eq 2 ] || die "usage: piglit-cl.sh run [-j N] [-t S] [-s all|ci] PLATFORM OUTDIR"
    local platform=$1 out=$2
    [ -x "$PIGLIT/bin/cl-program-tester" ] || die "piglit not installed under $PIGLIT"
    mkdir -p "$out/logs" || die "cannot create $out"
    out=$(cd "$out" && pwd)
    export -f run_one
    export PIGLIT P_PLATFORM=$platform P_OUT=$out P_TMO=$tmo
    local t0=$SECONDS
    list_tests "$subset" |
        awk -F'\t' '{ print $1; print $2 }' |
        xargs -d '\n' -n 2 -P "$jobs" bash -c \
            'name=$0; read -r -a cmd <<<"$1"; run_one "$P_PLATFORM" "$P_OUT" "$P_TMO" "$name" "${cmd[@]}"' \
        >"$out/results.unsorted"
    # results.txt: name and result; times.txt: seconds per test, slowest first.
    LC_ALL=C sort "$out/results.unsorted" | cut -f1,2 >"$out/results.txt"
    sort -t$'\t' -k3,3 -rn "$out/results.unsorted" | awk -F'\t' '{ print $3 "\t" $1 }' >"$out/times.txt"
    rm -f "$out/results.unsorted"
    {
        echo "platform: $platform"
        echo "subset: $subset, $jobs jobs, ${tmo}s per test, $((SECONDS - t0))s"
        summarize "$out"
    } >"$out/summary.txt"
    sed 's/^/piglit-cl: /' "$out/summary.txt"
    [ -s "$out/results.txt" ] || die "no results"
}

cmd_compare() {
    [ $# -eq 3 ] || die "usage: piglit-cl.sh compare NATIVE_DIR VIRTUAL_DIR XFAIL_FILE"
    local nat=$1/results.txt vir=$2/results.txt xfail=$3 bad=0 name rn rv
    [ -s "$nat" ] && [ -s "$vir" ] || die "missing results.txt"
    [ -f "$xfail" ] || die "no $xfail"
    # xfail names, each with a reason after '#'.
    local -A xf=()
    while IFS= read -r line; do
        case $line in '' | '#'*) continue ;; esac
        name=$(echo "${line%%#*}" | sed 's/[[:space:]]*$//')
        [ "$name" != "$line" ] || die "$xfail: no '# reason' on: $line"
        xf[$name]=1
    done <"$xfail"
    local -A vres=()
    while IFS=$'\t' read -r name rv; do vres[$name]=$rv; done <"$vir"
    local same=0 differ=0 xfailed=0
    while IFS=$'\t' read -r name rn; do
        rv=${vres[$name]:-missing}
        if [ "$rn" = "$rv" ]; then
            same=$((same + 1))
            [ -n "${xf[$name]:-}" ] && echo "piglit-cl: XPASS (same result; drop it from the xfail list?): $name ($rn)"
        elif [ -n "${xf[$name]:-}" ]; then
            xfailed=$((xfailed + 1))
            echo "piglit-cl: xfail: $name: native $rn, virtual $rv"
        else
            differ=$((differ + 1))
            echo "piglit-cl: DIFFERS: $name: native $rn, virtual $rv (log: $2/logs/$(echo "$name" | tr '/' '_').log)"
            bad=1
        fi
    done <"$nat"
    echo "piglit-cl: native:  $(summarize "$1")"
    echo "piglit-cl: virtual: $(summarize "$2")"
    echo "piglit-cl: $same same, $differ differ, $xfailed expected to differ"
    return $bad
}

# A timeout or crash on one side only may come from a loaded machine (make
# check runs tests side by side): run each such test again on both platforms,
# one at a time with three times the time, and put those results in.  Returns
# 1 when there was nothing to retry (the differences stand).
retry_inconclusive() {
    local out=$1 subset=$2 name cmd p dir res n=0
    local -A cmds=()
    while IFS=$'\t' read -r name cmd; do cmds[$name]=$cmd; done < <(list_tests "$subset")
    while IFS= read -r name; do
        [ -n "${cmds[$name]:-}" ] || continue
        for p in native virtual; do
            dir=$out/$p
            [ $p = native ] && plat=$MGVCL_NATIVE_PLATFORM || plat="mpigpu virtual"
            read -r -a c <<<"${cmds[$name]}"
            res=$(run_one "$plat" "$dir" 180 "$name" "${c[@]}" | cut -f2)
            echo "piglit-cl: retried $name on $p alone: $res"
            awk -F'\t' -v n="$name" -v r="$res" 'BEGIN { OFS = "\t" } $1 == n { $2 = r } { print }' \
                "$dir/results.txt" >"$dir/results.new" && mv "$dir/results.new" "$dir/results.txt"
        done
        n=$((n + 1))
    done < <(sed -n 's/^piglit-cl: DIFFERS: \(.*\): native \([a-z]*\), virtual \([a-z]*\) (log.*/\1\t\2\t\3/p' \
        "$out/compare.txt" | awk -F'\t' '$2 ~ /timeout|crash/ || $3 ~ /timeout|crash/ { print $1 }')
    [ $n -gt 0 ]
}

cmd_check() {
    local subset=${MPIGPU_PIGLIT_SUBSET:-ci} jobs=${MPIGPU_PIGLIT_JOBS:-2} out
    out=${abs_top_builddir:-.}/test/remote/piglit-out
    rm -rf "$out"
    # shellcheck source=proxy-env.sh
    . "$here/proxy-env.sh" || exit $?
    mgvcl_skip_unless_built || exit 77
    [ -x "$PIGLIT/bin/cl-program-tester" ] || die "piglit not installed (build-aux/install-deps)"
    mgvcl_start native || exit 1
    cmd_run -j "$jobs" -s "$subset" "$MGVCL_NATIVE_PLATFORM" "$out/native" || exit 1
    mgvcl_stop || exit 1
    mgvcl_start virtual || exit 1
    cmd_run -j "$jobs" -s "$subset" "mpigpu virtual" "$out/virtual" || exit 1
    kill -0 "$MGVCL_PROXY_PID" 2>/dev/null ||
        echo "piglit-cl: the proxy died during the virtual run (its log follows); the tests after that could not find the platform"
    # Compare first, then stop the proxy: a proxy that died on the way shows
    # both as differences and as its exit status and log.
    local st=0
    if ! cmd_compare "$out/native" "$out/virtual" "$here/piglit-xfail.txt" >"$out/compare.txt"; then
        cat "$out/compare.txt"
        retry_inconclusive "$out" "$subset" &&
            cmd_compare "$out/native" "$out/virtual" "$here/piglit-xfail.txt" || st=1
    else
        cat "$out/compare.txt"
    fi
    mgvcl_stop || st=1
    echo "piglit-cl: results and logs under $out"
    return $st
}

sub=${1:-check}
[ $# -gt 0 ] && shift
case $sub in
    run) cmd_run "$@" ;;
    compare) cmd_compare "$@" ;;
    check) cmd_check ;;
    *) die "unknown command $sub" ;;
esac
