# src/p2p: the point-to-point engine on device addresses: operations, their
# protocols and progress, node lanes, the piece worker, early messages.  Its
# face: p2p.h.  Below it: device, pack, datatype, common.
noinst_LTLIBRARIES += libmgp2p.la
MG_P2P_INC = -I$(top_srcdir)/src/p2p $(MG_DEVICE_INC)
libmgp2p_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_P2P_INC)
libmgp2p_la_SOURCES = src/p2p/op.c src/p2p/p2p.c src/p2p/proto_plain.c \
	src/p2p/proto_chunked.c src/p2p/proto_lane.c src/p2p/proto_rest.c src/p2p/proto_hook.c src/p2p/host_recv.c src/p2p/grant.c \
	src/p2p/progress.c src/p2p/lane.c src/p2p/early.c src/p2p/worker.c
noinst_HEADERS += src/p2p/p2p.h src/p2p/p2p_impl.h
