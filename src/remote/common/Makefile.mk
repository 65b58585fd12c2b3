# src/remote/common: what the client and the proxy share about OpenCL
# objects (image formats), kept out of wire/, which knows no OpenCL.  Its
# face: clformat.h.  Below it: nothing.
MG_RCOMMON_INC = -I$(top_srcdir)/src/remote/common
if REMOTE
noinst_LTLIBRARIES += libmgrc.la
libmgrc_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_RCOMMON_INC)
libmgrc_la_SOURCES = src/remote/common/clformat.c
libmgrc_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
noinst_HEADERS += src/remote/common/clformat.h
endif
