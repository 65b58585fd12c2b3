# src/remote/wire: the remote protocol's messages, their encoding and the
# bounds-checked cursor, and the shared key with its MACs.  Its face:
# wire.h.  Below it: common.
MG_WIRE_INC = -I$(top_srcdir)/src/remote/wire $(MG_COMMON_INC)
if REMOTE
noinst_LTLIBRARIES += libmgw.la
libmgw_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_WIRE_INC)
libmgw_la_SOURCES = src/remote/wire/wire.c src/remote/wire/auth.c
libmgw_la_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS) -fvisibility=hidden
# The settings table, the logger and the clock: the MPI-free part of common.
libmgw_la_LIBADD = libmgcommon.la $(SODIUM_LIBS)
noinst_HEADERS += src/remote/wire/wire.h src/remote/wire/messages.h
endif
