# src/remote/transport: byte-stream transports (TCP), the handshake on a
# fresh endpoint, and the bulk lanes (stream, shm, one-copy).  Its faces:
# transport.h, bulk.h.  Below it: wire, common.
MG_TRANSPORT_INC = -I$(top_srcdir)/src/remote/transport $(MG_WIRE_INC)
if REMOTE
noinst_LTLIBRARIES += libmgtr.la
libmgtr_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_TRANSPORT_INC)
libmgtr_la_SOURCES = src/remote/transport/transport_tcp.c src/remote/transport/handshake.c \
	src/remote/transport/bulk_stream.c src/remote/transport/bulk_shm.c \
	src/remote/transport/bulk_cma.c src/remote/transport/secure.c
libmgtr_la_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS) $(LIBCRYPTO_CFLAGS) -fvisibility=hidden
libmgtr_la_LIBADD = $(SODIUM_LIBS) $(LIBCRYPTO_LIBS)
noinst_HEADERS += src/remote/transport/transport.h src/remote/transport/bulk.h
endif
