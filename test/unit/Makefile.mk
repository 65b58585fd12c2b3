# test/unit
# pack engine (src/pack, src/kernels)
check_PROGRAMS += test/unit/test_pack
TESTS += test/unit/test_pack
test_unit_test_pack_SOURCES = test/unit/test_pack.c test/unit/test_pack_types.h
test_unit_test_pack_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
test_unit_test_pack_LDADD = libmgpk.la libmgcommon.la $(OPENCL_LIBS) $(CHECK_LIBS)
