# test/mpi
check_PROGRAMS += test/mpi/api test/mpi/pack_basic
test_mpi_api_SOURCES = test/mpi/api.c
test_mpi_api_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_pack_basic_SOURCES = test/mpi/pack_basic.c
test_mpi_pack_basic_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/api test/mpi/pack_basic
EXTRA_DIST += test/mpi/testlist
