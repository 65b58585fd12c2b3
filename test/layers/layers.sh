#!/bin/sh
# The layer check (doc/design.md, "Layers"): the library's folders form a
# stack, and each may use only the faces of the folders below it.
#   1. includes: a file of src/F includes only F's own headers, the faces
#      (below) of folders under F, the public header and config.h;
#   2. calls: every symbol an object of src/F takes from another folder's
#      objects is defined in a folder under F (nm on the built objects), so no
#      two folders call each other, whatever the headers say.
# The remote path (src/remote/) sits under OpenCL beside the library: its
# folders may use src/common and each other's faces only as
# wire < transport < client, proxy and remote/common < client, proxy
# (remote/common: what both know of OpenCL, which wire/ does not include);
# client and proxy never use each other, and no library folder uses any of
# them.
#   3. the ICD, libmpigpu-vcl.so, exports only the names of its vcl.map.
# Run by make check after the build; srcdir and abs_top_builddir come from
# the test environment, MGVCL_REMOTE_BUILT (test/remote/Makefile.mk) says
# whether the remote path was built.
set -u
src=${srcdir:-.}/src
bld=${abs_top_builddir:-.}/src

# Every folder, lowest first, with the folders it may use.
folders="common datatype pack device p2p coll mpi"
remote="remote/common remote/wire remote/transport remote/client remote/proxy"
[ "${MGVCL_REMOTE_BUILT:-yes}" = no ] || folders="$folders $remote"
below() {
    case $1 in
    common) echo "" ;;
    datatype) echo "common" ;;
    pack) echo "common datatype" ;;
    device) echo "common datatype pack" ;;
    p2p) echo "common datatype pack device" ;;
    coll) echo "common datatype pack device p2p" ;;
    mpi) echo "common datatype pack device p2p coll" ;;
    remote/common) echo "" ;;
    remote/wire) echo "common" ;;
    remote/transport) echo "common remote/wire" ;;
    remote/client | remote/proxy) echo "common remote/common remote/wire remote/transport" ;;
    esac
}
# Each folder's face: the headers other folders may include.
face() {
    case $1 in
    common) echo "mgerr.h mglog.h mgclock.h mgspin.h mgparam.h" ;;
    datatype) echo "mgdt.h mgdt_format.h" ;;
    pack) echo "mgpk.h" ;;
    device) echo "mgdev.h registry.h locality.h staging.h shared.h" ;;
    p2p) echo "p2p.h" ;;
    coll) echo "coll.h" ;;
    remote/common) echo "clformat.h" ;;
    remote/wire) echo "wire.h" ;;
    remote/transport) echo "transport.h bulk.h" ;;
    *) echo "" ;;
    esac
}

fail=0
bad() {
    echo "layers: $*" >&2
    fail=1
}

# 1. includes
for f in $folders; do
    allowed="config.h mpigpu.h mgpk_sources.h coll_entry.c file_entry.c" # and generated files
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
for f in $folders; do
    # libtool objects; a program's (mpigpu-proxy) lie beside its sources
    objs=$(ls "$bld/$f"/.libs/*.o 2>/dev/null || ls "$bld/$f"/*.o 2>/dev/null)
    if [ -z "$objs" ]; then
        echo "layers: no objects under $bld/$f (build first)" >&2
        exit 99
    fi
    n=$(echo "$f" | tr / _)
    nm $objs | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u >"$tmp/$n.def"
    nm $objs | awk '$1 == "U" {print $2}' | sort -u >"$tmp/$n.und"
done
# The ICD's loader entry points (client/vcl.map) keep their OpenCL names;
# the proxy's calls of those names go to the OpenCL library it links.
if [ -e "$tmp/remote_client.def" ]; then
    sed -n 's/^[[:space:]]*\(cl[A-Za-z]*\);.*/\1/p' "$src/remote/client/vcl.map" | sort >"$tmp/map"
    comm -23 "$tmp/remote_client.def" "$tmp/map" >"$tmp/x" && mv "$tmp/x" "$tmp/remote_client.def"
fi
# Likewise the OpenCL entry points that src/mpi/opencl.c interposes for
# shared memory, and the C library's I/O calls of src/mpi/hostio.c: other folders' calls of those names are OpenCL calls (they
# reach the interposer only at run time, by the lookup order, which is its
# purpose; device/shared.c calls the real ones through dlsym).
if [ -e "$tmp/mpi.def" ]; then
    { sed -n 's/^\(cl_int \|void \*\)\(cl[A-Za-z]*\)(.*/\2/p' "$src/mpi/opencl.c"
      sed -n 's/^\(ssize_t \|size_t \)\([a-z0-9]*\)(.*/\2/p' "$src/mpi/hostio.c"; } |
        sort -u >"$tmp/icl"
    comm -23 "$tmp/mpi.def" "$tmp/icl" >"$tmp/x" && mv "$tmp/x" "$tmp/mpi.def"
fi
for f in $folders; do
    ok=" $(below "$f") "
    for g in $folders; do
        [ "$g" = "$f" ] && continue
        case "$ok" in *" $g "*) continue ;; esac
        comm -12 "$tmp/$(echo "$f" | tr / _).und" "$tmp/$(echo "$g" | tr / _).def" >"$tmp/x"
        if [ -s "$tmp/x" ]; then
            bad "src/$f calls up or across into src/$g: $(tr '\n' ' ' <"$tmp/x")"
        fi
    done
done

# 3. the ICD (remote/client) exports exactly the names of vcl.map, and
# defines no other OpenCL name, even locally: its entry points are mgvcl_clXxx
if [ -e "$tmp/map" ]; then
    so=${abs_top_builddir:-.}/.libs/libmpigpu-vcl.so
    [ -e "$so" ] || { echo "layers: no $so (build first)" >&2; exit 99; }
    nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVWi]$/ {print $3}' | sed 's/@.*//' |
        sort -u >"$tmp/exp"
    comm -3 "$tmp/exp" "$tmp/map" >"$tmp/x"
    [ -s "$tmp/x" ] && bad "libmpigpu-vcl.so exports other names than vcl.map's: $(tr '\n\t' '  ' <"$tmp/x")"
    nm "$so" | awk '$3 ~ /^cl[A-Z]/ {print $3}' | sort -u | comm -23 - "$tmp/map" >"$tmp/x"
    [ -s "$tmp/x" ] && bad "libmpigpu-vcl.so defines bare OpenCL names: $(tr '\n' ' ' <"$tmp/x")"
fi

[ $fail -eq 0 ] && echo "layers: $folders: includes and calls go only down"
exit $fail
