#!/bin/sh
# mpigpu-halo on 8 ranks, small grids, two iterations: every mode ends with
# "verified" and exit 0, and all give the same field (the "# checksum" line
# sums every interior cell's bits and global index, so the same global grid
# gives the same checksum whatever the process grid).  Cases: a 2x2x2 grid
# that does not divide evenly (12:10:9) with fixed boundaries, the 7-point
# stencil and width 1; the same periodic with the 27-point stencil and width
# 2 (edges and corners move, the two ranks of a dimension are each other's
# neighbour on both sides; here the host mode also runs with the
# neighbourhood collective); a non-cubic 1x2x4 process grid (one rank along
# x: its own neighbour) with an uneven split, checked against 2x2x2 on the
# same grid.  A face corrupted on purpose (--corrupt RANK) must end in MISMATCH and
# exit 1.
#
# HALO_MODES lists the device modes to run besides host (default: p2p rect
# enqueue, and neighbor where libmpigpu.so defines MPI_Neighbor_alltoallw:
# without it MPI gets the device addresses and faults).  enqueue is skipped,
# with a note, while the program reports the MPIX_Enqueue_* calls
# unavailable.  The neighbor exchange also runs on host arrays
# (--mode host --host-exchange neighbor).
# Run by make check with MPIEXEC and abs_top_builddir in the environment.
set -u
halo=${abs_top_builddir:-.}/mpigpu-halo
mpiexec=${MPIEXEC:-mpiexec}
lib=${abs_top_builddir:-.}/.libs/libmpigpu.so
if [ -z "${HALO_MODES:-}" ]; then
    HALO_MODES="p2p rect enqueue"
    if nm -D --defined-only "$lib" 2>/dev/null | grep -q ' MPI_Neighbor_alltoallw$'; then
        HALO_MODES="$HALO_MODES neighbor"
    else
        echo "halo: neighbor skipped: $lib does not define MPI_Neighbor_alltoallw" >&2
    fi
fi
modes=$HALO_MODES
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
export MPIGPU_CALIBRATE=0 # the kernel method: no calibration on 8 ranks sharing 2 cores

# starts PREFIX: whether the last line starts with PREFIX.
starts() { case $last in "$1"*) return 0 ;; *) return 1 ;; esac; }

# run NAME ARGS...: runs 8 ranks; sets $rc, $last (last line), $sum (checksum).
run() {
    name=$1
    shift
    timeout 300 "$mpiexec" -n 8 "$halo" -i 2 "$@" >"$tmp/$name" 2>"$tmp/$name.err"
    rc=$?
    last=$(tail -n 1 "$tmp/$name")
    sum=$(sed -n 's/^# checksum \([0-9a-f]*\)$/\1/p' "$tmp/$name")
}

# check CASE HOSTMODES ARGS...: every mode verified, one checksum for all,
# left in $want.
check() {
    case_=$1
    hostmodes=$2
    shift 2
    want=
    for m in $hostmodes $modes; do
        case $m in
            host-neighbor) run "$case_-$m" --mode host --host-exchange neighbor "$@" ;;
            *) run "$case_-$m" --mode "$m" "$@" ;;
        esac
        if [ "$m" = enqueue ] && [ $rc -eq 1 ] && starts "not verified: mode enqueue is unavailable"; then
            echo "halo: $case_: enqueue skipped from here on: ${last#*: }" >&2
            modes=$(echo "$modes" | sed 's/enqueue//')
            continue
        fi
        if [ $rc -ne 0 ] || ! starts verified; then
            echo "halo: $case_ $m: exit $rc, last line: $last" >&2
            cat "$tmp/$case_-$m.err" >&2
            fail=1
            continue
        fi
        grep -q "^# mpigpu-halo .* mode $m " "$tmp/$case_-$m" || [ "$m" = host-neighbor ] ||
            { echo "halo: $case_ $m: header does not name the mode" >&2; fail=1; }
        [ "$(grep -c '^[-+][xyz] ' "$tmp/$case_-$m")" -eq 6 ] ||
            { echo "halo: $case_ $m: want 6 face rows" >&2; fail=1; }
        [ -n "$sum" ] || { echo "halo: $case_ $m: no checksum line" >&2; fail=1; }
        [ -z "$want" ] && want=$sum
        [ "$sum" = "$want" ] ||
            { echo "halo: $case_ $m: checksum $sum, other modes $want" >&2; fail=1; }
    done
}

check fixed7 host -g 12:10:9 -p 2:2:2
a=$want
grep -q '(uneven split)' "$tmp/fixed7-host" || { echo "halo: 12:10:9 over 2x2x2 not reported uneven" >&2; fail=1; }
check periodic27 "host host-neighbor" -g 12:10:9 -p 2:2:2 --periodic --stencil 27 -w 2
b=$want
[ "$a" != "$b" ] || { echo "halo: different problems gave one checksum" >&2; fail=1; }
# The same grid on 1x2x4 (p2p, with the CSV) and 2x2x2 (host): one field.
run nonCubic -g 7:10:13 -p 1:2:4 --periodic --stencil 27 -w 2 --mode p2p --csv "$tmp/halo.csv"
c=$sum
[ $rc -eq 0 ] && starts verified ||
    { echo "halo: 7:10:13 on 1x2x4: exit $rc, last line: $last" >&2; fail=1; }
run cubic -g 7:10:13 -p 2:2:2 --periodic --stencil 27 -w 2 --mode host
[ $rc -eq 0 ] && [ -n "$c" ] && [ "$sum" = "$c" ] ||
    { echo "halo: 7:10:13 on 2x2x2 (exit $rc, checksum $sum) differs from 1x2x4 ($c)" >&2; fail=1; }
# The CSV: a header and one row, with the mode and verified=1.
[ "$(wc -l <"$tmp/halo.csv")" -eq 2 ] && head -n 1 "$tmp/halo.csv" | grep -q '^mode,grid,procs,' &&
    tail -n 1 "$tmp/halo.csv" | grep -q '^p2p,7:10:13,1:2:4,8,2,27,1,.*,1,[^,]*$' ||
    { echo "halo: bad CSV:" >&2; cat "$tmp/halo.csv" >&2; fail=1; }

# A corrupted face: MISMATCH and exit 1.
run corrupt -g 12:10:9 --mode p2p --corrupt 5
[ $rc -eq 1 ] && starts MISMATCH: ||
    { echo "halo: --corrupt 5: exit $rc, last line: $last" >&2; fail=1; }

# Bad input: exit 2 with a message, no hang.
timeout 60 "$mpiexec" -n 8 "$halo" -p 3:1:1 >/dev/null 2>"$tmp/bad.err"
rc=$?
[ $rc -eq 2 ] && grep -q 'needs 3 ranks' "$tmp/bad.err" ||
    { echo "halo: -p 3:1:1 on 8 ranks: exit $rc" >&2; cat "$tmp/bad.err" >&2; fail=1; }

[ $fail -eq 0 ] || for f in "$tmp"/*; do echo "== $f"; cat "$f"; done
exit $fail
