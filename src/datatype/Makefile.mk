# The datatype engine: decode, normalize, serialize, cache, host reference.
noinst_LTLIBRARIES += libmgdt.la
libmgdt_la_SOURCES = src/datatype/stub.c
