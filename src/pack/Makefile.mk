# The pack engine: method choice, staging, launches, pipelining.
noinst_LTLIBRARIES += libmgpk.la
nodist_libmgpk_la_SOURCES = src/kernels/mgpk_sources.c
libmgpk_la_SOURCES = src/pack/stub.c
