# The device layer: interposed MPI calls, device addresses, init/finalize.
lib_LTLIBRARIES += libmpigpu.la
libmpigpu_la_SOURCES = src/mpid/gpu/settings.c src/mpid/gpu/registry.c src/mpid/gpu/init.c \
	src/mpid/gpu/errors.c src/mpid/gpu/api.c src/mpid/gpu/pack.c \
	src/mpid/gpu/staging.c src/mpid/gpu/p2p.c src/mpid/gpu/worker.c src/mpid/gpu/request.c \
	src/mpid/gpu/sendrecv.c src/mpid/gpu/progress.c src/mpid/gpu/persist.c src/mpid/gpu/largecount.c \
	src/mpid/gpu/refuse.c src/mpid/gpu/locality.c src/mpid/gpu/pinned.c \
	src/mpid/gpu/lane.c src/mpid/gpu/early.c
noinst_HEADERS += src/mpid/gpu/mgdev.h src/mpid/gpu/registry.h src/mpid/gpu/p2p.h \
	src/mpid/gpu/locality.h
libmpigpu_la_LIBADD = libmgpk.la libmgdt.la libmgcommon.la $(OPENCL_LIBS) $(HWLOC_LIBS) -lpthread
libmpigpu_la_LDFLAGS = -version-info 0:0:0
