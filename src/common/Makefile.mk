# Shared helpers used by every layer (error codes).
noinst_LTLIBRARIES += libmgcommon.la
libmgcommon_la_SOURCES = src/common/mgerr.c
