# src/common: what every layer shares: error codes and messages, the logger,
# the clock, spin-then-wait, the settings table and its parser.  Its face:
# mgerr.h mglog.h mgclock.h mgspin.h mgparam.h.  It includes no other folder;
# it needs neither MPI nor OpenCL, so the ICD and the proxy link it too.
noinst_LTLIBRARIES += libmgcommon.la
MG_COMMON_INC = -I$(top_srcdir)/src/common
libmgcommon_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_COMMON_INC)
libmgcommon_la_SOURCES = src/common/mgerr.c src/common/log.c src/common/mgparam.c \
	src/common/mgparam_table.c
noinst_HEADERS += src/common/mgerr.h src/common/mglog.h src/common/mgclock.h \
	src/common/mgspin.h src/common/mgparam.h
EXTRA_DIST += src/common/README.md
