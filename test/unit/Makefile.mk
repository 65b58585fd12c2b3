# test/unit
check_PROGRAMS += test/unit/test_datatype
TESTS += test/unit/test_datatype
test_unit_test_datatype_SOURCES = test/unit/test_datatype.c test/unit/dt_oracle.c \
	test/unit/dt_oracle.h
test_unit_test_datatype_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
test_unit_test_datatype_LDADD = libmgdt.la libmgcommon.la $(CHECK_LIBS) $(OPENCL_LIBS)
