# The remote OpenCL path (src/remote/) against real programs: each script
# starts its own mpigpu-proxy on loopback through test/remote/proxy-env.sh,
# and exits 77 (skipped) only when the remote part is not built.  Scripts run
# through SH_LOG_COMPILER (test/mpi/Makefile.mk) with abs_top_builddir set.
REMOTE_TESTS = test/remote/clinfo-compare.sh test/remote/piglit-cl.sh \
	test/remote/clpeak.sh test/remote/vclbench.sh test/remote/mpigpu-over-vcl.sh
TESTS += $(REMOTE_TESTS)
EXTRA_DIST += $(REMOTE_TESTS) test/remote/proxy-env.sh test/remote/piglit-xfail.txt
CLEANFILES += test/remote/vclbench.csv
clean-local: clean-remote-tests
.PHONY: clean-remote-tests
clean-remote-tests:
	rm -rf test/remote/piglit-out

# Write/read bandwidth, launch latency and clSetKernelArg cost of any OpenCL
# platform (plain OpenCL, no MPI): run by test/remote/vclbench.sh.
check_PROGRAMS += test/perf/mpigpu-vclbench
test_perf_mpigpu_vclbench_SOURCES = test/perf/mpigpu-vclbench.c
test_perf_mpigpu_vclbench_LDADD = $(OPENCL_LIBS)
