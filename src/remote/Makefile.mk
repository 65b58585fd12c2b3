# Remote devices: the virtual OpenCL ICD (libmpigpu-vcl.so) and mpigpu-proxy.
if REMOTE
noinst_LTLIBRARIES += libmgrm.la
libmgrm_la_SOURCES = src/remote/wire.c src/remote/wire.h src/remote/transport.h \
	src/remote/transport_tcp.c src/remote/auth.c src/remote/bulk.h src/remote/bulk_stream.c \
	src/remote/bulk_shm.c src/remote/bulk_cma.c
libmgrm_la_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS) -fvisibility=hidden
# The settings table and the logger (common/mgparam.h, mglog.h): the MPI-free part of common.
libmgrm_la_LIBADD = libmgcommon.la $(SODIUM_LIBS)

bin_PROGRAMS += mpigpu-proxy
mpigpu_proxy_SOURCES = src/remote/proxy_main.c src/remote/proxy_session.c \
	src/remote/proxy_ops.c src/remote/proxy_program.c src/remote/proxy_enqueue.c \
	src/remote/proxy_bulk.c src/remote/proxy_map.c src/remote/proxy_shm.c src/remote/proxy_cma.c \
	src/remote/proxy_stripe.c src/remote/proxy.h
mpigpu_proxy_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
mpigpu_proxy_LDADD = libmgrm.la $(OPENCL_LIBS) $(SODIUM_LIBS)

lib_LTLIBRARIES += libmpigpu-vcl.la
libmpigpu_vcl_la_SOURCES = src/remote/vcl_icd.c src/remote/vcl_conn.c src/remote/vcl_device.c \
	src/remote/vcl_mem.c src/remote/vcl_copy.c src/remote/vcl_program.c \
	src/remote/vcl_kernel.c src/remote/vcl_event.c src/remote/vcl.h
libmpigpu_vcl_la_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS) -fvisibility=hidden
libmpigpu_vcl_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -no-undefined \
	-Wl,-Bsymbolic -Wl,--version-script=$(top_srcdir)/src/remote/vcl.map
libmpigpu_vcl_la_LIBADD = libmgrm.la $(SODIUM_LIBS)
EXTRA_libmpigpu_vcl_la_DEPENDENCIES = $(top_srcdir)/src/remote/vcl.map
EXTRA_DIST += src/remote/vcl.map

# The registration file for the system's ICD loader.
icddir = $(sysconfdir)/OpenCL/vendors
icd_DATA = mpigpu-vcl.icd
mpigpu-vcl.icd: Makefile
	$(AM_V_GEN)echo "$(libdir)/libmpigpu-vcl.so" > $@
CLEANFILES += mpigpu-vcl.icd
endif

# libFuzzer target of the proxy's decoder (src/remote/fuzz_wire.c): `make fuzz`
# runs it for FUZZ_TIME seconds (default 60) over fuzz/corpus; make check runs
# a short pass (test/remote/fuzz.sh).
FUZZ_SRC = src/remote/fuzz_wire.c src/remote/wire.c src/remote/proxy_session.c \
	src/remote/proxy_ops.c src/remote/proxy_program.c src/remote/proxy_enqueue.c \
	src/remote/proxy_bulk.c src/remote/proxy_map.c src/remote/proxy_shm.c src/remote/proxy_cma.c \
	src/remote/proxy_stripe.c src/remote/bulk_stream.c src/remote/bulk_shm.c src/remote/bulk_cma.c src/remote/transport_tcp.c \
	src/common/log.c src/common/mgparam.c src/common/mgparam_table.c
EXTRA_DIST += src/remote/fuzz_wire.c
FUZZ_TIME = 60
.PHONY: fuzz
if HAVE_FUZZ
fuzz/mgrm-fuzz: $(FUZZ_SRC) src/remote/proxy.h src/remote/wire.h src/remote/transport.h \
		src/remote/bulk.h src/common/mglog.h src/common/mgclock.h \
		src/common/mgspin.h src/common/mgparam.h
	@$(MKDIR_P) fuzz
	$(AM_V_CCLD)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -I$(top_builddir) -I$(top_srcdir)/src/remote \
	  -I$(top_srcdir)/src/common -I. $(OPENCL_CFLAGS) \
	  $(addprefix $(top_srcdir)/,$(FUZZ_SRC)) -o $@ $(OPENCL_LIBS) -pthread
fuzz: fuzz/mgrm-fuzz
	@$(MKDIR_P) fuzz/corpus
	fuzz/mgrm-fuzz -max_total_time=$(FUZZ_TIME) -max_len=4096 fuzz/corpus
check_SCRIPTS += fuzz/mgrm-fuzz
CLEANFILES += fuzz/mgrm-fuzz
else
fuzz:
	@echo "make fuzz needs clang with -fsanitize=fuzzer (configure found none)"; exit 1
endif
