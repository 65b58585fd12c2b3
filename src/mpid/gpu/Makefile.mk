# The device layer: interposed MPI calls, device addresses, init/finalize.
lib_LTLIBRARIES += libmpigpu.la
libmpigpu_la_SOURCES = src/mpid/gpu/settings.c src/mpid/gpu/registry.c src/mpid/gpu/init.c \
	src/mpid/gpu/errors.c src/mpid/gpu/api.c src/mpid/gpu/pack.c
noinst_HEADERS += src/mpid/gpu/mgdev.h src/mpid/gpu/registry.h
libmpigpu_la_LIBADD = libmgpk.la libmgdt.la libmgcommon.la $(OPENCL_LIBS) $(HWLOC_LIBS) -lpthread
libmpigpu_la_LDFLAGS = -version-info 0:0:0
