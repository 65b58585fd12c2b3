#!/bin/sh
# The layer check (doc/design.md, "Layers"): the library's folders form a
# stack, and each may use only the faces of the folders below it.
#   1. includes: a file of src/F includes only F's own headers, the faces
#      (below) of folders under F, the public header and config.h;
#   2. calls: every symbol an object of src/F takes from another folder's
#      objects is defined in a folder under F (nm on the built objects), so no
#      two folders call each other, whatever the headers say.
# Run by make check after the build; srcdir and abs_top_builddir come from
# the test environment.
set -u
src=${srcdir:-.}/src
bld=${abs_top_builddir:-.}/src

# Lowest first.  A folder may use the folders before it.
stack="common datatype pack device p2p mpi"
# Each folder's face: the headers other folders may include.
face() {
    case $1 in
    common) echo "mgerr.h mglog.h mgclock.h mgspin.h mgparam.h" ;;
    datatype) echo "mgdt.h mgdt_format.h" ;;
    pack) echo "mgpk.h" ;;
    device) echo "mgdev.h registry.h locality.h staging.h" ;;
    p2p) echo "p2p.h" ;;
    mpi) echo "" ;;
    esac
}
below() { # the folders under $1
    out=
    for f in $stack; do
        [ "$f" = "$1" ] && break
        out="$out $f"
    done
    echo "$out"
}

fail=0
bad() {
    echo "layers: $*" >&2
    fail=1
}

# 1. includes
for f in $stack; do
    allowed="config.h mpigpu.h mgpk_sources.h"
    for h in "$src/$f"/*.h; do
        [ -e "$h" ] && allowed="$allowed $(basename "$h")"
    done
    for g in $(below "$f"); do
        allowed="$allowed $(face "$g")"
    done
    for file in "$src/$f"/*.c "$src/$f"/*.h; do
        [ -e "$file" ] || continue
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file"); do
            case " $allowed " in
            *" $inc "*) ;;
            *) bad "src/$f/$(basename "$file") includes \"$inc\", which is not a face of a folder under $f" ;;
            esac
        done
    done
done

# 2. calls, from the objects libtool built (src/F/.libs/*.o)
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
for f in $stack; do
    objs=$(ls "$bld/$f"/.libs/*.o 2>/dev/null)
    if [ -z "$objs" ]; then
        echo "layers: no objects under $bld/$f/.libs (build first)" >&2
        exit 99
    fi
    nm $objs | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u >"$tmp/$f.def"
    nm $objs | awk '$1 == "U" {print $2}' | sort -u >"$tmp/$f.und"
done
for f in $stack; do
    ok=" $(below "$f") "
    for g in $stack; do
        [ "$g" = "$f" ] && continue
        case "$ok" in *" $g "*) continue ;; esac
        comm -12 "$tmp/$f.und" "$tmp/$g.def" >"$tmp/x"
        if [ -s "$tmp/x" ]; then
            bad "src/$f calls up or across into src/$g: $(tr '\n' ' ' <"$tmp/x")"
        fi
    done
done

[ $fail -eq 0 ] && echo "layers: $stack: includes and calls go only down"
exit $fail
