#!/bin/bash
# badgen-survey.sh [BADGEN ARGS...]: runs test/mpi/badgen (2 ranks, through
# build-aux/mpiexec-wrap) over its cases, starting again after each case that
# killed the run (a signal or the watchdog), so that one crash does not hide
# the rest.  Prints every FAIL, FATAL SIGNAL and TIMEOUT line once, and a
# line for each case that killed a run.  Run it from the build tree, e.g.
#     test/mpi/badgen-survey.sh --only hostile,p2phostile
#     test/mpi/badgen-survey.sh --seed 7 --cases 500
# --first and --cases set the range (default 0 and 3000); the other arguments
# go to every run.  Not part of make check.
set -u
first=0 cases=3000 args=()
while [ $# -gt 0 ]; do
    case $1 in
        --first) first=$2; shift 2 ;;
        --cases) cases=$2; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
end=$((first + cases))
srcdir=${srcdir:-$(dirname "$0")/../..}
export srcdir
while [ "$first" -lt "$end" ]; do
    out=$("$srcdir/build-aux/mpiexec-wrap" test/mpi/badgen --timeout 20 ${args[@]+"${args[@]}"} \
        --first "$first" --cases $((end - first)) 2>&1)
    echo "$out" | grep -E "badgen: (FAIL|FATAL|TIMEOUT)"
    # The first case that killed a rank; a peer's later TIMEOUT follows from it.
    dead=$(echo "$out" | grep -E "badgen: (FATAL SIGNAL|TIMEOUT)" |
        sed -n 's/.* case \([0-9]*\) .*/\1/p' | sort -n | head -n 1)
    [ -z "$dead" ] && break
    echo "badgen-survey: case $dead killed the run; going on from case $((dead + 1))"
    first=$((dead + 1))
done | awk '!seen[$0]++'
