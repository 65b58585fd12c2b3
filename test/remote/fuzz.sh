#!/bin/bash
# A short libFuzzer pass over the proxy's message decoding (make fuzz runs
# longer).  Any crash, overread or undefined behaviour fails the test.
top=${abs_top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
exec timeout 300 "$top/fuzz/mgrm-fuzz" -runs=${MGRM_FUZZ_RUNS:-300000} -max_len=4096 -seed=1
