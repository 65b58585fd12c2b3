# src/common: what every layer shares (error codes and messages, the logger,
# the clock, spin-then-wait).
# Its face: mgerr.h mglog.h mgclock.h mgspin.h.  It includes no other folder.
noinst_LTLIBRARIES += libmgcommon.la
MG_COMMON_INC = -I$(top_srcdir)/src/common
libmgcommon_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_COMMON_INC)
libmgcommon_la_SOURCES = src/common/mgerr.c src/common/log.c
noinst_HEADERS += src/common/mgerr.h src/common/mglog.h src/common/mgclock.h \
	src/common/mgspin.h
