# Remote devices: tests through libmpigpu-vcl.so and mpigpu-proxy, each
# starting its own proxy on 127.0.0.1:0 (test/remote/common.sh).
EXTRA_DIST += test/remote/common.sh
if REMOTE
check_PROGRAMS += test/remote/vcl_basic
test_remote_vcl_basic_SOURCES = test/remote/vcl_basic.c
test_remote_vcl_basic_LDADD = $(OPENCL_LIBS)
TESTS += test/remote/vcl_basic.sh
EXTRA_DIST += test/remote/vcl_basic.sh
endif
if REMOTE
check_PROGRAMS += test/remote/rawclient
test_remote_rawclient_SOURCES = test/remote/rawclient.c
test_remote_rawclient_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
test_remote_rawclient_LDADD = libmgrm.la $(SODIUM_LIBS)
TESTS += test/remote/vcl_security.sh
EXTRA_DIST += test/remote/vcl_security.sh
endif
if REMOTE
# needs test/mpi/pack_basic and test/mpi/dtoracle (check_PROGRAMS of test/mpi)
TESTS += test/remote/vcl_mpi.sh
EXTRA_DIST += test/remote/vcl_mpi.sh
endif
EXTRA_DIST += test/remote/fuzz.sh
if HAVE_FUZZ
TESTS += test/remote/fuzz.sh
endif
if REMOTE
# Native against virtual: test/remote/vcl_bench "Portable" and through a proxy.
noinst_PROGRAMS += test/remote/vcl_bench
test_remote_vcl_bench_SOURCES = test/remote/vcl_bench.c
test_remote_vcl_bench_LDADD = $(OPENCL_LIBS)
endif
