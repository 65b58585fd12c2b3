# Remote devices: the virtual OpenCL ICD (libmpigpu-vcl.so) and mpigpu-proxy.
if REMOTE
noinst_LTLIBRARIES += libmgrm.la
libmgrm_la_SOURCES = src/remote/wire.c src/remote/wire.h src/remote/transport.h \
	src/remote/transport_tcp.c src/remote/auth.c
libmgrm_la_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS) -fvisibility=hidden
libmgrm_la_LIBADD = $(SODIUM_LIBS)

bin_PROGRAMS += mpigpu-proxy
mpigpu_proxy_SOURCES = src/remote/proxy_main.c src/remote/proxy_session.c \
	src/remote/proxy_ops.c src/remote/proxy_program.c src/remote/proxy_enqueue.c \
	src/remote/proxy_bulk.c src/remote/proxy_map.c src/remote/proxy.h
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
