# test/perf
