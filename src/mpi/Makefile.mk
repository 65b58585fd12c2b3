# src/mpi: the interposed MPI and MPIX entry points; they classify buffers and
# hand device work to the layers below.  Below it: p2p, device, pack,
# datatype, common.  Its objects form libmgmpi.la like any folder's, and
# libmpigpu is the folders' convenience libraries whole (src/mpi/README.md).
noinst_LTLIBRARIES += libmgmpi.la
MG_MPI_INC = -I$(top_srcdir)/src/mpi -I$(top_builddir)/src/mpi $(MG_COLL_INC)
libmgmpi_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_MPI_INC)
libmgmpi_la_SOURCES = src/mpi/init.c src/mpi/errors.c src/mpi/api.c src/mpi/pack.c \
	src/mpi/sendrecv.c src/mpi/request.c src/mpi/persist.c src/mpi/largecount.c \
	src/mpi/mpit.c src/mpi/args.c src/mpi/enqueue.c src/mpi/file.c \
	src/mpi/window.c src/mpi/opencl.c src/mpi/hostio.c src/mpi/coll.c src/mpi/partition.c
noinst_HEADERS += src/mpi/mgmpi.h

# The collective entry points, generated from one line per collective.
src/mpi/coll_entry.c: $(top_srcdir)/src/mpi/coll.def $(top_srcdir)/build-aux/gen-coll.awk
	$(AM_V_GEN)$(MKDIR_P) src/mpi && \
	  $(AWK) -f $(top_srcdir)/build-aux/gen-coll.awk $(top_srcdir)/src/mpi/coll.def >$@-t && mv $@-t $@
# The MPI-IO read and write entry points, the same way.
src/mpi/file_entry.c: $(top_srcdir)/src/mpi/file.def $(top_srcdir)/build-aux/gen-file.awk
	$(AM_V_GEN)$(MKDIR_P) src/mpi && \
	  $(AWK) -f $(top_srcdir)/build-aux/gen-file.awk $(top_srcdir)/src/mpi/file.def >$@-t && mv $@-t $@
BUILT_SOURCES += src/mpi/coll_entry.c src/mpi/file_entry.c
CLEANFILES += src/mpi/coll_entry.c src/mpi/file_entry.c
EXTRA_DIST += src/mpi/coll.def build-aux/gen-coll.awk src/mpi/file.def build-aux/gen-file.awk

# The library's folders, top first, and what they need.  White-box tests link
# these instead of libmpigpu.la (test/include/mgtest.h says why).
MG_ALL_LIBS = libmgmpi.la libmgcoll.la libmgp2p.la libmgdevice.la libmgpk.la libmgdt.la libmgcommon.la
MG_ALL_LIBS_DEPS = $(OPENCL_LIBS) $(HWLOC_LIBS) -lpthread -lm -ldl

lib_LTLIBRARIES += libmpigpu.la
libmpigpu_la_SOURCES =
libmpigpu_la_LIBADD = $(MG_ALL_LIBS) $(MG_ALL_LIBS_DEPS)
libmpigpu_la_LDFLAGS = -version-info 0:0:0
