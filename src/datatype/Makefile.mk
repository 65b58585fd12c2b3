# src/datatype: decode, normalize, serialize, cache, host reference.  Its face:
# mgdt.h and mgdt_format.h.  Below it: common.
noinst_LTLIBRARIES += libmgdt.la
MG_DATATYPE_INC = -I$(top_srcdir)/src/datatype $(MG_COMMON_INC)
libmgdt_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_DATATYPE_INC)
libmgdt_la_SOURCES = src/datatype/mgdt_tree.h src/datatype/tree.c src/datatype/decode.c \
	src/datatype/darray.c src/datatype/normalize.c src/datatype/serialize.c \
	src/datatype/cache.c src/datatype/ref.c src/datatype/twin.c \
	src/datatype/walk.c src/datatype/layout.c
noinst_HEADERS += src/datatype/mgdt.h src/datatype/mgdt_format.h
