# Benchmarks, installed as programs (API.md "Programs").  Their hand-written
# baseline kernels (hand.cl) are embedded at build time.
PERF_COMMON = test/perf/perf_common.c test/perf/perf_common.h
bin_PROGRAMS += mpigpu-packbench mpigpu-pingpong
mpigpu_packbench_SOURCES = test/perf/packbench.c $(PERF_COMMON)
mpigpu_packbench_LDADD = libmpigpu.la $(OPENCL_LIBS) -lm
mpigpu_pingpong_SOURCES = test/perf/pingpong.c $(PERF_COMMON)
mpigpu_pingpong_LDADD = libmpigpu.la $(OPENCL_LIBS) -lm
nodist_mpigpu_packbench_SOURCES = test/perf/hand_src.c
nodist_mpigpu_pingpong_SOURCES = test/perf/hand_src.c
# Launch-cost probe (not installed): the library's grid vector kernel and the
# hand kernel launched bare, without MPI (test/perf/launchprobe.c).
noinst_PROGRAMS += test/perf/launchprobe
test_perf_launchprobe_SOURCES = test/perf/launchprobe.c
nodist_test_perf_launchprobe_SOURCES = test/perf/hand_src.c
test_perf_launchprobe_LDADD = libmgpk.la libmgcommon.la $(OPENCL_LIBS)
# Transfer rates into each kind of host memory, shared memory included (not
# installed; doc/design.md "Node lanes").
noinst_PROGRAMS += test/perf/dmaprobe
test_perf_dmaprobe_SOURCES = test/perf/dmaprobe.c
test_perf_dmaprobe_LDADD = $(OPENCL_LIBS)
test/perf/hand_src.c: $(top_srcdir)/test/perf/hand.cl $(top_srcdir)/build-aux/embed-text.sh
	@mkdir -p test/perf
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/build-aux/embed-text.sh $@ perf_hand_src $(top_srcdir)/test/perf/hand.cl
BUILT_SOURCES += test/perf/hand_src.c
CLEANFILES += test/perf/hand_src.c
EXTRA_DIST += test/perf/hand.cl build-aux/embed-text.sh test/perf/plot.sh test/perf/device-run.sh \
	test/perf/device-p2p.sh test/perf/device-vcl.sh test/perf/device-cma.sh \
	test/perf/device-final.sh test/perf/device-s4.sh test/perf/device-s5.sh \
	test/perf/device-vcl-lib.sh test/perf/device-s6.sh test/perf/device-s7.sh test/perf/device-s8.sh \
	test/perf/device-s9.sh test/perf/device-s10.sh test/perf/device-s11.sh test/perf/device-s12.sh test/perf/device-s13.sh test/perf/device-s14.sh test/perf/device-s15.sh 	test/perf/device-common.sh
# A short ping-pong on 2 ranks in make check (arguments in test/mpi/testlist).
TESTS += mpigpu-pingpong
