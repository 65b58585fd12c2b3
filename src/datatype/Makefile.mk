# The datatype engine: decode, normalize, serialize, cache, host reference.
noinst_LTLIBRARIES += libmgdt.la
libmgdt_la_SOURCES = src/datatype/mgdt_tree.h src/datatype/tree.c src/datatype/decode.c \
	src/datatype/darray.c src/datatype/normalize.c src/datatype/serialize.c \
	src/datatype/cache.c src/datatype/ref.c src/datatype/twin.c \
	src/datatype/walk.c
