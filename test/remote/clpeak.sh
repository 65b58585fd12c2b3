#!/bin/bash
# clpeak's transfer bandwidth and kernel latency tests through "mpigpu
# virtual" (and, to compare, on PoCL natively first). Fails unless each run
# completes with every figure present and the virtual run reports the virtual
# platform; with both, prints the figures side by side with their ratio
# (virtual / native).
#
#   clpeak.sh            virtual only (make check); CLPEAK_COMPARE=1: native first,
#                        then virtual, and the ratios
#   clpeak.sh native     native twice (the script alone, without the remote part)
# Each side runs with only its platform in the ICD vendors directory, so that
# clpeak's -p 0 -d 0 is the device in question.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=proxy-env.sh
. "$here/proxy-env.sh"

command -v clpeak >/dev/null || {
    echo "clpeak: not installed (build-aux/install-deps)" >&2
    exit 1
}
mode=${1:-virtual}
[ "$mode" = native ] || { mgvcl_skip_unless_built || exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/clpeak.XXXXXX") || exit 1
MGVCL_EXIT_HOOK='rm -rf "$out"'
trap "$MGVCL_EXIT_HOOK" EXIT

# The figures clpeak's XML dump holds for these two tests.
FIGS="enqueuewritebuffer enqueuereadbuffer enqueuewritebuffer_nonblocking
enqueuereadbuffer_nonblocking enqueuemapbuffer memcpy_from_mapped_ptr
enqueueunmap memcpy_to_mapped_ptr kernel_launch_latency"

# run_side NAME MODE: clpeak under the harness; NAME.xml and NAME.txt.
run_side() {
    local name=$1 rc f v
    mgvcl_start "$2" || return 1
    (cd "$out" && OCL_ICD_VENDORS=$MGVCL_ONLY_VENDORS $MGVCL_EXT timeout 600 clpeak -p 0 -d 0 \
        --transfer-bandwidth --kernel-latency --enable-xml-dump -f "$out/$name.xml") \
        >"$out/$name.txt" 2>&1
    rc=$?
    sed "s/^/clpeak[$name]: /" "$out/$name.txt"
    mgvcl_stop || return 1
    [ $rc -eq 0 ] || { echo "clpeak: $name run exited with status $rc" >&2; return 1; }
    grep -q "<platform name=\"$MGVCL_PLATFORM_RAN\"" "$out/$name.xml" || {
        echo "clpeak: $name run did not run on platform '$MGVCL_PLATFORM_RAN'" >&2
        return 1
    }
    for f in $FIGS; do
        v=$(sed -n "s:.*<$f[^>]*>\([0-9.e+-]*\)</$f>.*:\1:p" "$out/$name.xml")
        [ -n "$v" ] || { echo "clpeak: $name run gave no $f figure" >&2; return 1; }
        echo "$f $v" >>"$out/$name.figs"
    done
}

# The native run only gives the ratios (a third of the test's time): make
# check runs the virtual side alone unless CLPEAK_COMPARE=1.
if [ "$mode" = native ] || [ "${CLPEAK_COMPARE:-0}" = 1 ]; then
    MGVCL_PLATFORM_RAN=$MGVCL_NATIVE_PLATFORM
    run_side native native || exit 1
fi
[ "$mode" = native ] || MGVCL_PLATFORM_RAN=$MGVCL_VIRTUAL_PLATFORM
run_side virtual "$mode" || exit 1
[ -f "$out/native.figs" ] || { sed 's/^/clpeak figure (virtual): /' "$out/virtual.figs"; exit 0; }

printf '%-32s %12s %12s %8s\n' "clpeak figure (GB/s; us)" native virtual ratio
paste -d' ' "$out/native.figs" <(cut -d' ' -f2 "$out/virtual.figs") |
    awk '{ printf "%-32s %12.2f %12.2f %8.2f\n", $1, $2, $3, ($2 > 0 ? $3 / $2 : 0) }'
