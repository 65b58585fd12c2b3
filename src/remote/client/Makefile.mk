# src/remote/client: the virtual OpenCL ICD, libmpigpu-vcl.so (platform
# "mpigpu virtual").  Its face to the world is the ICD dispatch table and
# the loader entry points of vcl.map; no folder includes its headers.
# Below it: transport, wire, remote/common, common.
MG_CLIENT_INC = -I$(top_srcdir)/src/remote/client $(MG_TRANSPORT_INC) $(MG_RCOMMON_INC)
if REMOTE
lib_LTLIBRARIES += libmpigpu-vcl.la
libmpigpu_vcl_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_CLIENT_INC)
libmpigpu_vcl_la_SOURCES = src/remote/client/vcl_icd.c src/remote/client/vcl_conn.c \
	src/remote/client/vcl_device.c src/remote/client/vcl_mem.c src/remote/client/vcl_copy.c \
	src/remote/client/vcl_program.c src/remote/client/vcl_kernel.c src/remote/client/vcl_multi.c \
	src/remote/client/vcl_event.c src/remote/client/vcl_image.c src/remote/client/vcl.h
libmpigpu_vcl_la_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS) -fvisibility=hidden
libmpigpu_vcl_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -no-undefined \
	-Wl,-Bsymbolic -Wl,--version-script=$(top_srcdir)/src/remote/client/vcl.map
libmpigpu_vcl_la_LIBADD = libmgtr.la libmgw.la libmgrc.la $(SODIUM_LIBS) $(LIBCRYPTO_LIBS)
EXTRA_libmpigpu_vcl_la_DEPENDENCIES = $(top_srcdir)/src/remote/client/vcl.map
EXTRA_DIST += src/remote/client/vcl.map

# The registration file for the system's ICD loader.
icddir = $(sysconfdir)/OpenCL/vendors
icd_DATA = mpigpu-vcl.icd
mpigpu-vcl.icd: Makefile
	$(AM_V_GEN)echo "$(libdir)/libmpigpu-vcl.so" > $@
CLEANFILES += mpigpu-vcl.icd
endif
