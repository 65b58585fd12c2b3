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
EXTRA_DIST += test/perf/device-run.sh \
	test/perf/device-p2p.sh test/perf/device-vcl.sh test/perf/device-cma.sh \
	test/perf/device-final.sh test/perf/device-s4.sh test/perf/device-s5.sh \
	test/perf/device-vcl-lib.sh test/perf/device-s6.sh test/perf/device-s7.sh test/perf/device-s8.sh \
	test/perf/device-s9.sh test/perf/device-s10.sh test/perf/device-s11.sh test/perf/device-s12.sh test/perf/device-s13.sh test/perf/device-s14.sh test/perf/device-s15.sh 	test/perf/device-common.sh
