# src/mpi: the interposed MPI and MPIX entry points; they classify buffers and
# hand device work to the layers below.  It builds libmpigpu.  Below it: p2p,
# device, pack, datatype, common.
lib_LTLIBRARIES += libmpigpu.la
MG_MPI_INC = -I$(top_srcdir)/src/mpi $(MG_P2P_INC)
libmpigpu_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_MPI_INC)
libmpigpu_la_SOURCES = src/mpi/init.c src/mpi/errors.c src/mpi/api.c src/mpi/pack.c \
	src/mpi/sendrecv.c src/mpi/request.c src/mpi/persist.c src/mpi/largecount.c \
	src/mpi/refuse.c src/mpi/mpit.c
noinst_HEADERS += src/mpi/mgmpi.h
libmpigpu_la_LIBADD = libmgp2p.la libmgdevice.la libmgpk.la libmgdt.la libmgcommon.la \
	$(OPENCL_LIBS) $(HWLOC_LIBS) -lpthread
libmpigpu_la_LDFLAGS = -version-info 0:0:0
