# Check unit tests of single modules.
check_PROGRAMS += test/unit/test_registry
TESTS += test/unit/test_registry
VALGRIND_TESTS += test/unit/test_registry
test_unit_test_registry_SOURCES = test/unit/test_registry.c src/device/registry.c
test_unit_test_registry_CPPFLAGS = $(AM_CPPFLAGS)
test_unit_test_registry_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
test_unit_test_registry_LDADD = libmgdt.la libmgcommon.la $(CHECK_LIBS) $(OPENCL_LIBS) -lpthread

check_PROGRAMS += test/unit/test_datatype
TESTS += test/unit/test_datatype
VALGRIND_TESTS += test/unit/test_datatype
test_unit_test_datatype_SOURCES = test/unit/test_datatype.c test/unit/dt_oracle.c \
	test/unit/dt_oracle.h
test_unit_test_datatype_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
test_unit_test_datatype_LDADD = libmgdt.la libmgcommon.la $(CHECK_LIBS) $(OPENCL_LIBS)

check_PROGRAMS += test/unit/test_pack
TESTS += test/unit/test_pack
VALGRIND_TESTS += test/unit/test_pack
test_unit_test_pack_SOURCES = test/unit/test_pack.c test/unit/test_pack_types.h
test_unit_test_pack_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
test_unit_test_pack_LDADD = libmgpk.la libmgdt.la libmgcommon.la $(OPENCL_LIBS) $(CHECK_LIBS)

check_PROGRAMS += test/unit/test_calib
TESTS += test/unit/test_calib
VALGRIND_TESTS += test/unit/test_calib
test_unit_test_calib_SOURCES = test/unit/test_calib.c
test_unit_test_calib_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
test_unit_test_calib_LDADD = libmgpk.la libmgdt.la libmgcommon.la $(OPENCL_LIBS) $(CHECK_LIBS)

check_PROGRAMS += test/unit/test_locality
TESTS += test/unit/test_locality
VALGRIND_TESTS += test/unit/test_locality
test_unit_test_locality_SOURCES = test/unit/test_locality.c src/device/locality.c
test_unit_test_locality_CPPFLAGS = $(AM_CPPFLAGS)
test_unit_test_locality_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
test_unit_test_locality_LDADD = libmgcommon.la $(CHECK_LIBS) $(HWLOC_LIBS) $(OPENCL_LIBS)

# The settings table and its parser, and the device layer reading it.
check_PROGRAMS += test/unit/test_param
TESTS += test/unit/test_param
VALGRIND_TESTS += test/unit/test_param
test_unit_test_param_SOURCES = test/unit/test_param.c src/device/settings.c
test_unit_test_param_CPPFLAGS = $(AM_CPPFLAGS)
test_unit_test_param_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
test_unit_test_param_LDADD = libmgcommon.la $(CHECK_LIBS)
