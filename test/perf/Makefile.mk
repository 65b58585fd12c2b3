# Launch-cost probe (not installed): the library's grid vector kernel and the
# hand kernel launched bare, without MPI (test/perf/launchprobe.c).
noinst_PROGRAMS += test/perf/launchprobe
test_perf_launchprobe_SOURCES = test/perf/launchprobe.c
nodist_test_perf_launchprobe_SOURCES = tools/hand_src.c
test_perf_launchprobe_LDADD = libmgpk.la libmgcommon.la $(OPENCL_LIBS)
# Transfer rates into each kind of host memory, shared memory included (not
# installed; doc/design.md "Node lanes").
noinst_PROGRAMS += test/perf/dmaprobe
test_perf_dmaprobe_SOURCES = test/perf/dmaprobe.c
test_perf_dmaprobe_LDADD = $(OPENCL_LIBS)
# The runner of the device suites and its guide (test/perf/README.md).
EXTRA_DIST += test/perf/device-run.sh test/perf/README.md
# The host-only benchmark of issue 31 (test/perf/README.md): a plain MPI
# program, linked with MPI only, so that LD_PRELOAD=libmpigpu.so alone makes
# the difference; hostbench.sh runs it both ways in alternate rounds.
check_PROGRAMS += test/perf/hostbench
test_perf_hostbench_SOURCES = test/perf/hostbench.c
test_perf_hostbench_LDADD = -ldl
EXTRA_DIST += test/perf/hostbench.sh
# Its smoke test: every mode once, plain and preloaded, tiny sizes (no timing).
TESTS += test/perf/hostbench_smoke.sh
EXTRA_DIST += test/perf/hostbench_smoke.sh
# What one small OpenCL command costs when two processes take turns on one
# GPU, by kind of command (not installed; issue 31, doc/performance.md).
noinst_PROGRAMS += test/perf/shareprobe
test_perf_shareprobe_SOURCES = test/perf/shareprobe.c
test_perf_shareprobe_LDADD = $(OPENCL_LIBS)
# 64-byte ping-pong: blocking device MPI against the enqueue calls waited for
# with clFinish (issue 23's overhead target; not a test).
noinst_PROGRAMS += test/perf/enqpingpong
test_perf_enqpingpong_SOURCES = test/perf/enqpingpong.c
test_perf_enqpingpong_LDADD = libmpigpu.la $(OPENCL_LIBS)
# File I/O through the enqueue calls, device buffer against host buffer
# (issue 23's file target; not a test).
noinst_PROGRAMS += test/perf/enqfile
test_perf_enqfile_SOURCES = test/perf/enqfile.c
test_perf_enqfile_LDADD = libmpigpu.la $(OPENCL_LIBS)
# Issue 29's targets for shared memory (MPIX_Gpu_malloc_shared): a host loop
# through the shared pointer + a kernel, and a kernel + a host sum through
# it, against the explicit copies (test/perf/sharedbench.c).
noinst_PROGRAMS += test/perf/sharedbench
test_perf_sharedbench_SOURCES = test/perf/sharedbench.c
test_perf_sharedbench_LDADD = libmpigpu.la $(OPENCL_LIBS)
# How long the runtime takes to act on user events, markers and their
# callbacks, which the enqueue calls rely on (not installed; no MPI).
noinst_PROGRAMS += test/perf/eventprobe
test_perf_eventprobe_SOURCES = test/perf/eventprobe.c
test_perf_eventprobe_LDADD = $(OPENCL_LIBS)
