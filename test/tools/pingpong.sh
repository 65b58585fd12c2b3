#!/bin/sh
# mpigpu-pingpong's output on 2 ranks: the OSU layout ('# ' header lines,
# then rows that start with the size and the latency) and its last two
# columns, what each rank's library ran, read through MPI_T.  --method host
# runs (issue 31: it aborted) and says host for a strided type on both
# device sides, under the plain protocol; contiguous data is one copy under
# every method; a host side moves nothing through the library ('-').  Run by
# make check with MPIEXEC and abs_top_builddir in the environment.
set -u
pp=${abs_top_builddir:-.}/mpigpu-pingpong
mpiexec=${MPIEXEC:-mpiexec}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

# run NAME WANT0 WANT1 ARGS...: every row's last two columns must be WANT0
# and WANT1, and the header must name the method the library read.
run() {
    name=$1 want0=$2 want1=$3
    shift 3
    MPIGPU_P2P_PROTOCOL=plain timeout 300 "$mpiexec" -n 2 "$pp" -m 64:4K -i 3 -x 1 "$@" \
        >"$tmp/$name" 2>"$tmp/$name.err"
    rc=$?
    [ $rc -eq 0 ] || { echo "pingpong: $name: exit $rc" >&2; fail=1; }
    method=$(sed -n 's/^# mpigpu-pingpong .* method \([a-z?]*\)$/\1/p' "$tmp/$name")
    asked=$(echo " $* " | sed -n 's/.* --method \([a-z]*\) .*/\1/p')
    [ "$method" = "${asked:-auto}" ] ||
        { echo "pingpong: $name: header method '$method', want '${asked:-auto}'" >&2; fail=1; }
    grep -q '^# Size  Latency(us).*rank0 *rank1$' "$tmp/$name" ||
        { echo "pingpong: $name: no column header" >&2; fail=1; }
    rows=$(grep -c '^[0-9]' "$tmp/$name")
    [ "$rows" -eq 7 ] || { echo "pingpong: $name: $rows rows, want 7 (64 B to 4 KiB)" >&2; fail=1; }
    bad=$(awk -v a="$want0" -v b="$want1" '/^[0-9]/ {
              if ($2 + 0 <= 0 || $(NF - 1) != a || $NF != b) print }' "$tmp/$name")
    [ -z "$bad" ] || { echo "pingpong: $name: rows not ending in '$want0 $want1':" >&2; echo "$bad" >&2; fail=1; }
}

run host-vect host/plain host/plain --method host -D vect:64:8
run host-struct host/plain host/plain --method host -D struct -d device:device
run copy-cont copy/plain copy/plain --method host -D cont
run kernel-cont copy/plain copy/plain --method kernel -D cont
run dev-host copy/plain - -D cont -d device:host
run host-host - - -D vect:64:8 -d host:host
[ $fail -eq 0 ] || for f in "$tmp"/*; do echo "== $f"; cat "$f"; done
exit $fail
