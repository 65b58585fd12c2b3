# Benchmarks, installed as programs (API.md "Programs").
bin_PROGRAMS += mpigpu-packbench
mpigpu_packbench_SOURCES = test/perf/packbench.c
mpigpu_packbench_LDADD = libmpigpu.la $(OPENCL_LIBS) -lm
