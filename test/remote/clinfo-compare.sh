#!/bin/bash
# clinfo through the virtual platform: every property of the served PoCL
# device, as `clinfo --raw` prints it, must equal the native one, except the
# properties listed in IGNORE below (each with its reason).
#
#   clinfo-compare.sh            make check: native PoCL vs. "mpigpu virtual"
#   clinfo-compare.sh native     both sides native (shows the script itself
#                                works where the remote part is not built)
# Each side runs with a vendors directory that holds one platform only, so
# that clinfo's device 0 is the device in question.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=proxy-env.sh
. "$here/proxy-env.sh"

# Properties allowed to differ.  Platform properties describe the ICD, not
# the device: the virtual platform has its own name, vendor, version,
# extension list and ICD suffix.  The host timer resolution and the numeric
# and versioned forms are platform queries of OpenCL 2.1/3.0 (the virtual
# platform is OpenCL 1.2).
# Of the device, only CL_DEVICE_HOST_UNIFIED_MEMORY: the remote device's
# memory is not this host's memory, so the virtual device reports CL_FALSE
# (programs that would wrap host memory must copy instead).  Every other
# device property, the image support and limits included (images are
# served), must pass through unchanged.
IGNORE='
CL_DEVICE_HOST_UNIFIED_MEMORY
CL_PLATFORM_NAME
CL_PLATFORM_VENDOR
CL_PLATFORM_VERSION
CL_PLATFORM_NUMERIC_VERSION
CL_PLATFORM_EXTENSIONS
CL_PLATFORM_EXTENSIONS_WITH_VERSION
CL_PLATFORM_ICD_SUFFIX_KHR
CL_PLATFORM_HOST_TIMER_RESOLUTION
'


# clinfo_props OUTFILE: "PROPERTY VALUE" lines for the platform and its
# device 0 (the [SUFFIX/0] prefix removed).  The ICD loader's own section
# ([OCLICD/*]) and the NULL-platform checks are left out: they describe the
# loader, which is the same program on both sides.
clinfo_props() {
    clinfo --raw >"$1.raw" 2>&1 || {
        echo "clinfo-compare: clinfo failed:" >&2
        cat "$1.raw" >&2
        return 1
    }
    awk '
        /^#PLATFORMS/ { inplat = 1; next }
        inplat && /^$/ { inplat = 0; next }
        inplat && $1 ~ /^CL_/ { print; next }
        /^\[[^]]*\/0\]/ { sub(/^\[[^]]*\/0\][ \t]*/, ""); print }
    ' "$1.raw" | sed 's/[[:space:]]\+/ /g; s/^ //; s/ $//' >"$1"
    [ "$(grep -c '^CL_DEVICE_NAME ' "$1")" -eq 1 ] || {
        echo "clinfo-compare: expected exactly one device in clinfo's output:" >&2
        cat "$1.raw" >&2
        return 1
    }
}

mode=${1:-virtual}
[ "$mode" = native ] || { mgvcl_skip_unless_built || exit 77; }
# Debian's clinfo 3.0.23 overflows a heap buffer of its own in sprintf, which
# the ASan runtime that a sanitizer build's ICD needs stops on: this
# comparison runs in the normal build only.
if [ -n "$MGVCL_EXT" ]; then
    echo "clinfo-compare: skipped in a sanitizer build (clinfo itself fails under ASan)"
    exit 77
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/clinfo-compare.XXXXXX") || exit 1
MGVCL_EXIT_HOOK='rm -rf "$out"'
trap "$MGVCL_EXIT_HOOK" EXIT

mgvcl_start native || exit 1
clinfo_props "$out/native" || exit 1
mgvcl_stop || exit 1

mgvcl_start "$mode" || exit 1
if [ "$mode" = virtual ]; then
    OCL_ICD_VENDORS=$MGVCL_ONLY_VENDORS clinfo_props "$out/virtual" || exit 1
    grep -qx "CL_PLATFORM_NAME mpigpu virtual" "$out/virtual" || {
        echo "clinfo-compare: the platform is not 'mpigpu virtual':" >&2
        grep CL_PLATFORM_NAME "$out/virtual" >&2
        exit 1
    }
else
    clinfo_props "$out/virtual" || exit 1
fi
mgvcl_stop || exit 1

ignored() { echo "$IGNORE" | grep -qx "$1"; }

bad=0 n=0 nignored=0
declare -A vval=()
while read -r prop val; do vval[$prop]=$val; done <"$out/virtual"
while read -r prop val; do
    n=$((n + 1))
    if ignored "$prop"; then
        nignored=$((nignored + 1))
        [ "${vval[$prop]-<missing>}" = "$val" ] ||
            echo "clinfo-compare: allowed difference: $prop: native '$val', virtual '${vval[$prop]-<missing>}'"
    elif [ "${vval[$prop]-<missing>}" != "$val" ]; then
        echo "clinfo-compare: DIFFERS: $prop: native '$val', virtual '${vval[$prop]-<missing>}'"
        bad=1
    fi
    unset "vval[$prop]"
done <"$out/native"
for prop in "${!vval[@]}"; do
    ignored "$prop" && continue
    echo "clinfo-compare: DIFFERS: $prop only through the virtual platform: '${vval[$prop]}'"
    bad=1
done
echo "clinfo-compare: $n properties, $nignored allowed to differ, device $(sed -n 's/^CL_DEVICE_NAME //p' "$out/native")"
[ $bad -eq 0 ] && echo "clinfo-compare: all device properties match"
exit $bad
