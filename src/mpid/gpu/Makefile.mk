# The device layer: interposed MPI calls, device addresses, init/finalize.
lib_LTLIBRARIES += libmpigpu.la
libmpigpu_la_SOURCES = src/mpid/gpu/stub.c
libmpigpu_la_LIBADD = libmgpk.la libmgdt.la libmgcommon.la $(OPENCL_LIBS) $(HWLOC_LIBS) -lpthread
libmpigpu_la_LDFLAGS = -version-info 0:0:0
