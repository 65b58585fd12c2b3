# src/coll: the collective engine on device addresses: what each side of a
# collective is, its staging through host memory of the same layout, and
# MPI's own collective on it (blocking, nonblocking through the p2p engine's
# hook operations, persistent).  Its face: coll.h.  Below it: p2p, device,
# pack, datatype, common.
noinst_LTLIBRARIES += libmgcoll.la
MG_COLL_INC = -I$(top_srcdir)/src/coll $(MG_P2P_INC)
libmgcoll_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_COLL_INC)
libmgcoll_la_SOURCES = src/coll/layout.c src/coll/stage.c src/coll/run.c src/coll/pmpi.c \
	src/coll/reduce.c src/coll/packed.c src/coll/pipe.c
noinst_HEADERS += src/coll/coll.h src/coll/coll_impl.h
EXTRA_DIST += src/coll/README.md
