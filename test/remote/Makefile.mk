# Remote devices: tests through libmpigpu-vcl.so and mpigpu-proxy, each
# starting its own proxy on 127.0.0.1:0 (test/remote/common.sh).
EXTRA_DIST += test/remote/common.sh
if REMOTE
check_PROGRAMS += test/remote/vcl_basic
test_remote_vcl_basic_SOURCES = test/remote/vcl_basic.c test/remote/vcl_test.h test/remote/vcl_check.h
test_remote_vcl_basic_LDADD = $(OPENCL_LIBS)
TESTS += test/remote/vcl_basic.sh test/remote/vcl_shm.sh test/remote/vcl_cma.sh
EXTRA_DIST += test/remote/vcl_basic.sh test/remote/vcl_shm.sh test/remote/vcl_cma.sh
endif
# One context over three proxies: buffers that move proxy to proxy, events
# of one proxy in another's wait lists (vcl_multi.c).
if REMOTE
check_PROGRAMS += test/remote/vcl_multi
test_remote_vcl_multi_SOURCES = test/remote/vcl_multi.c test/remote/vcl_test.h test/remote/vcl_check.h
test_remote_vcl_multi_LDADD = $(OPENCL_LIBS)
TESTS += test/remote/vcl_multi.sh
EXTRA_DIST += test/remote/vcl_multi.sh
endif
# Peer copy and broadcast against a TCP stream and one write (a benchmark, not
# in TESTS): test/remote/vclmultibench.sh.
EXTRA_DIST += test/remote/vclmultibench.sh
# Images and samplers (vcl_image.c), against the host and native PoCL.
if REMOTE
check_PROGRAMS += test/remote/vcl_image
test_remote_vcl_image_SOURCES = test/remote/vcl_image.c test/remote/vcl_test.h test/remote/vcl_check.h
test_remote_vcl_image_LDADD = $(OPENCL_LIBS) -lm
TESTS += test/remote/vcl_image.sh
EXTRA_DIST += test/remote/vcl_image.sh
endif
if REMOTE
check_PROGRAMS += test/remote/rawclient
test_remote_rawclient_SOURCES = test/remote/rawclient.c test/remote/vcl_check.h
test_remote_rawclient_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_TRANSPORT_INC)
test_remote_rawclient_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
test_remote_rawclient_LDADD = libmgtr.la libmgw.la $(SODIUM_LIBS) $(LIBCRYPTO_LIBS)
TESTS += test/remote/vcl_security.sh test/remote/vcl_streams.sh test/remote/vcl_quota.sh \
	test/remote/vcl_limits.sh
EXTRA_DIST += test/remote/vcl_security.sh test/remote/vcl_streams.sh test/remote/vcl_quota.sh \
	test/remote/vcl_limits.sh
endif
# Encryption of the TCP lanes: the record layer over a pipe in memory, and
# the lanes through a relay that records and alters them.
if REMOTE
check_PROGRAMS += test/remote/sec_records
test_remote_sec_records_SOURCES = test/remote/sec_records.c test/remote/vcl_check.h
test_remote_sec_records_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_TRANSPORT_INC)
test_remote_sec_records_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
test_remote_sec_records_LDADD = libmgtr.la libmgw.la $(SODIUM_LIBS) $(LIBCRYPTO_LIBS)
TESTS += test/remote/sec_records
# The record layer's cost per byte over loopback TCP (a benchmark, not a test).
check_PROGRAMS += test/remote/sec_bench
test_remote_sec_bench_SOURCES = test/remote/sec_bench.c
test_remote_sec_bench_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_TRANSPORT_INC)
test_remote_sec_bench_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
test_remote_sec_bench_LDADD = libmgtr.la libmgw.la $(SODIUM_LIBS) $(LIBCRYPTO_LIBS)
check_PROGRAMS += test/remote/relay
test_remote_relay_SOURCES = test/remote/relay.c
test_remote_relay_LDADD = -lpthread
TESTS += test/remote/vcl_crypt.sh
EXTRA_DIST += test/remote/vcl_crypt.sh
endif
# What encryption costs (a benchmark, not in TESTS): test/remote/vclcryptbench.sh.
EXTRA_DIST += test/remote/vclcryptbench.sh
# The wire's message table, round-tripped from the table itself.
if REMOTE
check_PROGRAMS += test/remote/wire_table
test_remote_wire_table_SOURCES = test/remote/wire_table.c
test_remote_wire_table_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_WIRE_INC)
test_remote_wire_table_LDADD = libmgw.la $(SODIUM_LIBS)
TESTS += test/remote/wire_table
endif
EXTRA_DIST += test/remote/fuzz.sh test/remote/pocl-lsan.supp test/remote/lsan-use.sh
if HAVE_FUZZ
TESTS += test/remote/fuzz.sh
endif

# The remote OpenCL path (src/remote/) against real programs: each script
# starts its own mpigpu-proxy on loopback through test/remote/proxy-env.sh,
# and exits 77 (skipped) only when the remote part is not built.  Scripts run
# through SH_LOG_COMPILER (test/mpi/Makefile.mk) with abs_top_builddir set.
# MGVCL_REMOTE_BUILT tells proxy-env.sh whether configure built the remote
# part: "no" skips these tests, "yes" makes missing programs an error.
if REMOTE
AM_TESTS_ENVIRONMENT += MGVCL_REMOTE_BUILT=yes; export MGVCL_REMOTE_BUILT;
else
AM_TESTS_ENVIRONMENT += MGVCL_REMOTE_BUILT=no; export MGVCL_REMOTE_BUILT;
endif
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
check_PROGRAMS += test/remote/mpigpu-vclbench
test_remote_mpigpu_vclbench_SOURCES = test/remote/mpigpu-vclbench.c
test_remote_mpigpu_vclbench_LDADD = $(OPENCL_LIBS)
