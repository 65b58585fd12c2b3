#!/bin/sh
# The export check (src/mpi/README.md, "Exports"): libmpigpu.so exports the
# MPI_ calls it interposes, the MPIX_ functions of mpigpu.h and the OpenCL
# entry points that src/mpi/opencl.c interposes for shared memory, the C
# library's I/O calls that src/mpi/hostio.c interposes for it, nothing else.
#   1. every defined dynamic symbol is MPI_* or MPIX_*: the folders are
#      compiled with -fvisibility=hidden, so no mg* name leaks;
#   2. every MPI_/MPIX_ function that src/mpi defines (a line that starts
#      "int MPI_" or "int MPIX_") and every function mpigpu.h declares is
#      exported: an interposed call without MPIGPU_EXPORT would be hidden,
#      and MPI's own would run instead, silently;
#   3. every exported function is defined on a line that starts "int NAME(",
#      in src/mpi (not stamped out by a macro), so that grep finds it.
# Run by make check after the build; srcdir and abs_top_builddir come from
# the test environment.
set -u
top=${srcdir:-.}
lib=${abs_top_builddir:-.}/.libs/libmpigpu.so
if [ ! -f "$lib" ]; then
    echo "exports: $lib not built (--disable-shared?)"
    exit 77
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# Names that start with an underscore are reserved to the toolchain, which
# may add some (linker and sanitizer symbols); the library defines none.
nm -D --defined-only "$lib" | awk 'NF >= 3 && $3 !~ /^_/ {print $3}' | sort -u >"$tmp/exported"
if [ ! -s "$tmp/exported" ]; then
    echo "exports: nm -D lists nothing defined in $lib" >&2
    exit 99
fi
fail=0

# Besides: the OpenCL entry points that keep shared memory coherent, each
# defined on a line of src/mpi/opencl.c that starts with its return type.
sed -n 's/^\(cl_int \|void \*\)\(cl[A-Za-z]*\)(.*/\2/p' "$top"/src/mpi/opencl.c >"$tmp/cl0"
sed -n 's/^\(ssize_t \|size_t \)\([a-z0-9]*\)(.*/\2/p' "$top"/src/mpi/hostio.c >>"$tmp/cl0"
sort -u "$tmp/cl0" >"$tmp/cl"
grep -Ev '^MPIX?_' "$tmp/exported" | comm -23 - "$tmp/cl" >"$tmp/extra"
if [ -s "$tmp/extra" ]; then
    echo "exports: libmpigpu.so exports internal symbols: $(tr '\n' ' ' <"$tmp/extra")" >&2
    fail=1
fi

sed -n 's/^int \(MPIX\{0,1\}_[A-Za-z0-9_]*\)(.*/\1/p' "$top"/src/mpi/*.c | sort -u >"$tmp/defined"
sed -n 's/^MPIGPU_EXPORT int \(MPIX_[A-Za-z0-9_]*\)(.*/\1/p' "$top"/include/mpigpu.h |
    sort -u >"$tmp/declared"
sort -u "$tmp/defined" "$tmp/declared" "$tmp/cl" | comm -23 - "$tmp/exported" >"$tmp/missing"
if [ -s "$tmp/missing" ]; then
    echo "exports: defined or declared but not exported (MPIGPU_EXPORT missing?): $(tr '\n' ' ' <"$tmp/missing")" >&2
    fail=1
fi

sort -u "$tmp/defined" "$tmp/cl" | comm -13 - "$tmp/exported" >"$tmp/stamped"
if [ -s "$tmp/stamped" ]; then
    echo "exports: exported but no line of src/mpi starts \"int NAME(\" (a macro?): $(tr '\n' ' ' <"$tmp/stamped")" >&2
    fail=1
fi

if [ $fail -eq 0 ]; then
    echo "exports: $(grep -c '^MPI_' "$tmp/exported") MPI_ and $(grep -c '^MPIX_' "$tmp/exported") MPIX_ symbols, $(wc -l <"$tmp/cl") OpenCL and I/O entry points of src/mpi/opencl.c and hostio.c, nothing else"
fi
exit $fail
