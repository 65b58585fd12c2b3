# MPI programs listed in test/mpi/testlist, run by make check through
# build-aux/mpiexec-wrap (automake's LOG_COMPILER).
LOG_COMPILER = $(top_srcdir)/build-aux/mpiexec-wrap
AM_TESTS_ENVIRONMENT = srcdir=$(top_srcdir) MPIEXEC=$(MPIEXEC) abs_top_builddir=$(abs_top_builddir); \
	export srcdir MPIEXEC abs_top_builddir;
EXTRA_DIST += test/mpi/testlist build-aux/mpiexec-wrap

noinst_HEADERS += test/include/mgtest.h test/include/mgtest_types.h test/include/mgtest_check.h
check_PROGRAMS += test/mpi/api test/mpi/pack_basic test/mpi/dtoracle
test_mpi_api_SOURCES = test/mpi/api.c
test_mpi_api_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_pack_basic_SOURCES = test/mpi/pack_basic.c
test_mpi_pack_basic_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_dtoracle_SOURCES = test/mpi/dtoracle.c test/mpi/typegen.c test/mpi/typegen.h
test_mpi_dtoracle_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/api test/mpi/pack_basic test/mpi/dtoracle
# Every MPIX_ call before MPI_Init and after MPI_Finalize; the reservation
# after MPI_Finalize.
check_PROGRAMS += test/mpi/lifecycle
test_mpi_lifecycle_SOURCES = test/mpi/lifecycle.c
test_mpi_lifecycle_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/lifecycle
check_PROGRAMS += test/mpi/pack_attr
test_mpi_pack_attr_SOURCES = test/mpi/pack_attr.c
test_mpi_pack_attr_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/pack_attr
# The same without calibration (MPIGPU_CALIBRATE=0 in the testlist).
check_PROGRAMS += test/mpi/pack_attr_static
test_mpi_pack_attr_static_SOURCES = $(test_mpi_pack_attr_SOURCES)
test_mpi_pack_attr_static_LDADD = $(test_mpi_pack_attr_LDADD)
TESTS += test/mpi/pack_attr_static
# The packed twin of random types, through MPI's own matching (white-box:
# the library's folders linked in, test/include/mgtest.h).
check_PROGRAMS += test/mpi/twin
test_mpi_twin_SOURCES = test/mpi/twin.c test/mpi/typegen.c test/mpi/typegen.h
test_mpi_twin_LDADD = $(MG_ALL_LIBS) $(MG_ALL_LIBS_DEPS)
TESTS += test/mpi/twin
# The same oracle through the other paths (settings differ in the testlist).
check_PROGRAMS += test/mpi/dtoracle_pipeline test/mpi/dtoracle_copy test/mpi/dtoracle_host
test_mpi_dtoracle_pipeline_SOURCES = $(test_mpi_dtoracle_SOURCES)
test_mpi_dtoracle_pipeline_LDADD = $(test_mpi_dtoracle_LDADD)
test_mpi_dtoracle_copy_SOURCES = $(test_mpi_dtoracle_SOURCES)
test_mpi_dtoracle_copy_LDADD = $(test_mpi_dtoracle_LDADD)
test_mpi_dtoracle_host_SOURCES = $(test_mpi_dtoracle_SOURCES)
test_mpi_dtoracle_host_LDADD = $(test_mpi_dtoracle_LDADD)
TESTS += test/mpi/dtoracle_pipeline test/mpi/dtoracle_copy test/mpi/dtoracle_host
# MPIGPU_PACK=host on a unified device maps the device sides in place; with
# MPIGPU_FORCE_PIPELINE it stages them in host copies, as on a discrete GPU.
check_PROGRAMS += test/mpi/dtoracle_hoststage
test_mpi_dtoracle_hoststage_SOURCES = $(test_mpi_dtoracle_SOURCES)
test_mpi_dtoracle_hoststage_LDADD = $(test_mpi_dtoracle_LDADD)
TESTS += test/mpi/dtoracle_hoststage
# Straight transfers between device staging and host memory (MPIGPU_HOST_DMA=on).
check_PROGRAMS += test/mpi/dtoracle_dma
test_mpi_dtoracle_dma_SOURCES = $(test_mpi_dtoracle_SOURCES)
test_mpi_dtoracle_dma_LDADD = $(test_mpi_dtoracle_LDADD)
TESTS += test/mpi/dtoracle_dma
# The grid kernels of GPUs (MPIGPU_GRID=3: three words per work-item), forced
# on any device, with a work-group size set (MPIGPU_LOCAL).
check_PROGRAMS += test/mpi/dtoracle_grid
test_mpi_dtoracle_grid_SOURCES = $(test_mpi_dtoracle_SOURCES)
test_mpi_dtoracle_grid_LDADD = $(test_mpi_dtoracle_LDADD)
TESTS += test/mpi/dtoracle_grid
# MPIGPU_PACK=auto after a fresh calibration (MPIGPU_CALIBRATE=force): the
# table's kernel, copy and host choices give the oracle's bytes.
check_PROGRAMS += test/mpi/dtoracle_auto
test_mpi_dtoracle_auto_SOURCES = $(test_mpi_dtoracle_SOURCES)
test_mpi_dtoracle_auto_LDADD = $(test_mpi_dtoracle_LDADD)
TESTS += test/mpi/dtoracle_auto
# Point-to-point on device buffers.  p2p_misc, p2p_pingpong, p2p_persist and
# p2p_contig (and their variants) read the library's counters through MPI_T,
# as a tool does (test/mpi/mpit_read.c).
# Programs named *_chunk* run with a small staging pool, so that messages are
# longer than one chunk; *_chunked also with MPIGPU_P2P_PROTOCOL=chunked.
check_PROGRAMS += test/mpi/p2p_basic test/mpi/p2p_chunk test/mpi/p2p_chunked
test_mpi_p2p_basic_SOURCES = test/mpi/p2p_basic.c test/mpi/p2p_common.h
test_mpi_p2p_basic_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_p2p_chunk_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_chunk_LDADD = $(test_mpi_p2p_basic_LDADD)
test_mpi_p2p_chunked_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_chunked_LDADD = $(test_mpi_p2p_basic_LDADD)
# p2p_basic_dma: the staging pool's pinned buffers through the straight path.
check_PROGRAMS += test/mpi/p2p_basic_dma
test_mpi_p2p_basic_dma_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_basic_dma_LDADD = $(test_mpi_p2p_basic_LDADD)
TESTS += test/mpi/p2p_basic test/mpi/p2p_chunk test/mpi/p2p_chunked test/mpi/p2p_basic_dma
# The paths of a GPU shared with other processes, forced on PoCL
# (MPIGPU_FORCE_SHARED): two-row writes, copy-method packs straight to host.
check_PROGRAMS += test/mpi/p2p_basic_shared test/mpi/p2p_basic_shared_copy test/mpi/dtoracle_shared
test_mpi_p2p_basic_shared_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_basic_shared_LDADD = $(test_mpi_p2p_basic_LDADD)
test_mpi_p2p_basic_shared_copy_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_basic_shared_copy_LDADD = $(test_mpi_p2p_basic_LDADD)
test_mpi_dtoracle_shared_SOURCES = $(test_mpi_dtoracle_SOURCES)
test_mpi_dtoracle_shared_LDADD = $(test_mpi_dtoracle_LDADD)
TESTS += test/mpi/p2p_basic_shared test/mpi/p2p_basic_shared_copy test/mpi/dtoracle_shared
# MPIGPU_PACK=host (the testlist): in place on PoCL's zero-copy buffers, and
# through host copies of the extent under MPIGPU_FORCE_PIPELINE, whole
# messages and pieces (a worker unpacks them into the open copy).
check_PROGRAMS += test/mpi/p2p_basic_host test/mpi/p2p_chunked_host test/mpi/p2p_chunked_hoststage
test_mpi_p2p_basic_host_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_basic_host_LDADD = $(test_mpi_p2p_basic_LDADD)
test_mpi_p2p_chunked_host_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_chunked_host_LDADD = $(test_mpi_p2p_basic_LDADD)
test_mpi_p2p_chunked_hoststage_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_chunked_hoststage_LDADD = $(test_mpi_p2p_basic_LDADD)
TESTS += test/mpi/p2p_basic_host test/mpi/p2p_chunked_host test/mpi/p2p_chunked_hoststage
# The chunked protocol's pieces by MPI (node lanes off), and through a lane of
# two 4 KiB slots (many pieces, the ring wraps and fills).
check_PROGRAMS += test/mpi/p2p_chunked_mpi test/mpi/p2p_chunked_lane4k
test_mpi_p2p_chunked_mpi_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_chunked_mpi_LDADD = $(test_mpi_p2p_basic_LDADD)
test_mpi_p2p_chunked_lane4k_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_chunked_lane4k_LDADD = $(test_mpi_p2p_basic_LDADD)
TESTS += test/mpi/p2p_chunked_mpi test/mpi/p2p_chunked_lane4k
check_PROGRAMS += test/mpi/p2p_misc test/mpi/p2p_misc4 test/mpi/p2p_misc_chunk \
	test/mpi/p2p_misc_chunked
test_mpi_p2p_misc_SOURCES = test/mpi/p2p_misc.c test/mpi/p2p_common.h test/mpi/mpit_read.c \
	test/mpi/mpit_read.h
test_mpi_p2p_misc_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_p2p_misc4_SOURCES = $(test_mpi_p2p_misc_SOURCES)
test_mpi_p2p_misc4_LDADD = $(test_mpi_p2p_misc_LDADD)
test_mpi_p2p_misc_chunk_SOURCES = $(test_mpi_p2p_misc_SOURCES)
test_mpi_p2p_misc_chunk_LDADD = $(test_mpi_p2p_misc_LDADD)
test_mpi_p2p_misc_chunked_SOURCES = $(test_mpi_p2p_misc_SOURCES)
test_mpi_p2p_misc_chunked_LDADD = $(test_mpi_p2p_misc_LDADD)
TESTS += test/mpi/p2p_misc test/mpi/p2p_misc4 test/mpi/p2p_misc_chunk test/mpi/p2p_misc_chunked
check_PROGRAMS += test/mpi/p2p_misc_chunked_mpi
test_mpi_p2p_misc_chunked_mpi_SOURCES = $(test_mpi_p2p_misc_SOURCES)
test_mpi_p2p_misc_chunked_mpi_LDADD = $(test_mpi_p2p_misc_LDADD)
TESTS += test/mpi/p2p_misc_chunked_mpi
# MPIGPU_PACK=host through host copies (Sendrecv_replace, persistent and
# probed receives included).
check_PROGRAMS += test/mpi/p2p_misc_hoststage
test_mpi_p2p_misc_hoststage_SOURCES = $(test_mpi_p2p_misc_SOURCES)
test_mpi_p2p_misc_hoststage_LDADD = $(test_mpi_p2p_misc_LDADD)
TESTS += test/mpi/p2p_misc_hoststage
check_PROGRAMS += test/mpi/p2p_pingpong test/mpi/p2p_pingpong_long test/mpi/p2p_pingpong_pipe \
	test/mpi/p2p_pingpong_pipe1
test_mpi_p2p_pingpong_SOURCES = test/mpi/p2p_pingpong.c test/mpi/p2p_common.h \
	test/mpi/mpit_read.c test/mpi/mpit_read.h
test_mpi_p2p_pingpong_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_p2p_pingpong_long_SOURCES = $(test_mpi_p2p_pingpong_SOURCES)
test_mpi_p2p_pingpong_long_LDADD = $(test_mpi_p2p_pingpong_LDADD)
test_mpi_p2p_pingpong_pipe_SOURCES = $(test_mpi_p2p_pingpong_SOURCES)
test_mpi_p2p_pingpong_pipe_LDADD = $(test_mpi_p2p_pingpong_LDADD)
test_mpi_p2p_pingpong_pipe1_SOURCES = $(test_mpi_p2p_pingpong_SOURCES)
test_mpi_p2p_pingpong_pipe1_LDADD = $(test_mpi_p2p_pingpong_LDADD)
TESTS += test/mpi/p2p_pingpong test/mpi/p2p_pingpong_long test/mpi/p2p_pingpong_pipe \
	test/mpi/p2p_pingpong_pipe1
check_PROGRAMS += test/mpi/p2p_pingpong_lane
test_mpi_p2p_pingpong_lane_SOURCES = $(test_mpi_p2p_pingpong_SOURCES)
test_mpi_p2p_pingpong_lane_LDADD = $(test_mpi_p2p_pingpong_LDADD)
TESTS += test/mpi/p2p_pingpong_lane
check_PROGRAMS += test/mpi/p2p_persist test/mpi/p2p_persist_chunk test/mpi/p2p_persist_chunked
test_mpi_p2p_persist_SOURCES = test/mpi/p2p_persist.c test/mpi/p2p_common.h \
	test/mpi/mpit_read.c test/mpi/mpit_read.h
test_mpi_p2p_persist_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_p2p_persist_chunk_SOURCES = $(test_mpi_p2p_persist_SOURCES)
test_mpi_p2p_persist_chunk_LDADD = $(test_mpi_p2p_persist_LDADD)
test_mpi_p2p_persist_chunked_SOURCES = $(test_mpi_p2p_persist_SOURCES)
test_mpi_p2p_persist_chunked_LDADD = $(test_mpi_p2p_persist_LDADD)
TESTS += test/mpi/p2p_persist test/mpi/p2p_persist_chunk test/mpi/p2p_persist_chunked
# A persistent operation keeps the host method's copy between its starts.
check_PROGRAMS += test/mpi/p2p_persist_hoststage
test_mpi_p2p_persist_hoststage_SOURCES = $(test_mpi_p2p_persist_SOURCES)
test_mpi_p2p_persist_hoststage_LDADD = $(test_mpi_p2p_persist_LDADD)
TESTS += test/mpi/p2p_persist_hoststage
check_PROGRAMS += test/mpi/p2p_mprobe test/mpi/p2p_mprobe_chunked
test_mpi_p2p_mprobe_SOURCES = test/mpi/p2p_mprobe.c test/mpi/p2p_common.h
test_mpi_p2p_mprobe_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_p2p_mprobe_chunked_SOURCES = $(test_mpi_p2p_mprobe_SOURCES)
test_mpi_p2p_mprobe_chunked_LDADD = $(test_mpi_p2p_mprobe_LDADD)
TESTS += test/mpi/p2p_mprobe test/mpi/p2p_mprobe_chunked
check_PROGRAMS += test/mpi/p2p_probe test/mpi/p2p_probe_chunked
test_mpi_p2p_probe_SOURCES = test/mpi/p2p_probe.c test/mpi/p2p_common.h
test_mpi_p2p_probe_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_p2p_probe_chunked_SOURCES = $(test_mpi_p2p_probe_SOURCES)
test_mpi_p2p_probe_chunked_LDADD = $(test_mpi_p2p_probe_LDADD)
TESTS += test/mpi/p2p_probe test/mpi/p2p_probe_chunked
# The default protocol (auto) made to send pieces from 16K on (*_auto), a
# first piece shorter than the pool's chunk (*_first), and the plain protocol.
check_PROGRAMS += test/mpi/p2p_auto
test_mpi_p2p_auto_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_auto_LDADD = $(test_mpi_p2p_basic_LDADD)
TESTS += test/mpi/p2p_auto
check_PROGRAMS += test/mpi/p2p_first
test_mpi_p2p_first_SOURCES = $(test_mpi_p2p_basic_SOURCES)
test_mpi_p2p_first_LDADD = $(test_mpi_p2p_basic_LDADD)
TESTS += test/mpi/p2p_first
check_PROGRAMS += test/mpi/p2p_misc_auto
test_mpi_p2p_misc_auto_SOURCES = $(test_mpi_p2p_misc_SOURCES)
test_mpi_p2p_misc_auto_LDADD = $(test_mpi_p2p_misc_LDADD)
TESTS += test/mpi/p2p_misc_auto
check_PROGRAMS += test/mpi/p2p_misc_first
test_mpi_p2p_misc_first_SOURCES = $(test_mpi_p2p_misc_SOURCES)
test_mpi_p2p_misc_first_LDADD = $(test_mpi_p2p_misc_LDADD)
TESTS += test/mpi/p2p_misc_first
check_PROGRAMS += test/mpi/p2p_misc_plain
test_mpi_p2p_misc_plain_SOURCES = $(test_mpi_p2p_misc_SOURCES)
test_mpi_p2p_misc_plain_LDADD = $(test_mpi_p2p_misc_LDADD)
TESTS += test/mpi/p2p_misc_plain
check_PROGRAMS += test/mpi/p2p_misc_hostmsg test/mpi/p2p_misc_hostmsg1m
test_mpi_p2p_misc_hostmsg_SOURCES = $(test_mpi_p2p_misc_SOURCES)
test_mpi_p2p_misc_hostmsg_LDADD = $(test_mpi_p2p_misc_LDADD)
test_mpi_p2p_misc_hostmsg1m_SOURCES = $(test_mpi_p2p_misc_SOURCES)
test_mpi_p2p_misc_hostmsg1m_LDADD = $(test_mpi_p2p_misc_LDADD)
TESTS += test/mpi/p2p_misc_hostmsg test/mpi/p2p_misc_hostmsg1m
check_PROGRAMS += test/mpi/p2p_persist_auto
test_mpi_p2p_persist_auto_SOURCES = $(test_mpi_p2p_persist_SOURCES)
test_mpi_p2p_persist_auto_LDADD = $(test_mpi_p2p_persist_LDADD)
TESTS += test/mpi/p2p_persist_auto
check_PROGRAMS += test/mpi/p2p_mprobe_auto
test_mpi_p2p_mprobe_auto_SOURCES = $(test_mpi_p2p_mprobe_SOURCES)
test_mpi_p2p_mprobe_auto_LDADD = $(test_mpi_p2p_mprobe_LDADD)
TESTS += test/mpi/p2p_mprobe_auto
check_PROGRAMS += test/mpi/p2p_pingpong_auto
test_mpi_p2p_pingpong_auto_SOURCES = $(test_mpi_p2p_pingpong_SOURCES)
test_mpi_p2p_pingpong_auto_LDADD = $(test_mpi_p2p_pingpong_LDADD)
TESTS += test/mpi/p2p_pingpong_auto
check_PROGRAMS += test/mpi/p2p_probe_auto
test_mpi_p2p_probe_auto_SOURCES = $(test_mpi_p2p_probe_SOURCES)
test_mpi_p2p_probe_auto_LDADD = $(test_mpi_p2p_probe_LDADD)
TESTS += test/mpi/p2p_probe_auto
# LD_PRELOAD of an unmodified binary: a plain MPI program (no libmpigpu)
# run by a script, twice.
check_PROGRAMS += test/mpi/p2p_preload
test_mpi_p2p_preload_SOURCES = test/mpi/p2p_preload.c
test_mpi_p2p_preload_LDADD = -ldl
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
TESTS += test/mpi/p2p_preload.sh
EXTRA_DIST += test/mpi/p2p_preload.sh
# Settings that differ between processes (MPMD runs of test/mpi/api).
TESTS += test/mpi/p2p_settings.sh
EXTRA_DIST += test/mpi/p2p_settings.sh
# A window of 64 host receives on one buffer (osu_bw's): statuses, data,
# and no landing buffer allocated after the first window.
check_PROGRAMS += test/mpi/p2p_window
test_mpi_p2p_window_SOURCES = test/mpi/p2p_window.c test/mpi/p2p_common.h
test_mpi_p2p_window_LDADD = $(MG_ALL_LIBS) $(MG_ALL_LIBS_DEPS)
TESTS += test/mpi/p2p_window
# The grant protocol: host-only windows of bare receives, and a device
# sender's first messages plain, then in pieces once granted.
check_PROGRAMS += test/mpi/p2p_grant test/mpi/p2p_grant_chunked test/mpi/p2p_grant_plain
test_mpi_p2p_grant_SOURCES = test/mpi/p2p_grant.c test/mpi/p2p_common.h
test_mpi_p2p_grant_LDADD = $(MG_ALL_LIBS) $(MG_ALL_LIBS_DEPS)
test_mpi_p2p_grant_chunked_SOURCES = $(test_mpi_p2p_grant_SOURCES)
test_mpi_p2p_grant_chunked_LDADD = $(test_mpi_p2p_grant_LDADD)
test_mpi_p2p_grant_plain_SOURCES = $(test_mpi_p2p_grant_SOURCES)
test_mpi_p2p_grant_plain_LDADD = $(test_mpi_p2p_grant_LDADD)
TESTS += test/mpi/p2p_grant test/mpi/p2p_grant_chunked test/mpi/p2p_grant_plain
# The buffer classification of every call (issue 31) against MPI's
# extents: predefined and derived types, both ends of the device range.
check_PROGRAMS += test/mpi/host_classify
test_mpi_host_classify_SOURCES = test/mpi/host_classify.c test/mpi/p2p_common.h
test_mpi_host_classify_LDADD = $(MG_ALL_LIBS) $(MG_ALL_LIBS_DEPS)
TESTS += test/mpi/host_classify
check_PROGRAMS += test/mpi/p2p_threads
test_mpi_p2p_threads_SOURCES = test/mpi/p2p_threads.c test/mpi/p2p_common.h
test_mpi_p2p_threads_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/p2p_threads
# The default device (hwloc locality) and its MPIGPU_VERBOSE line.
check_PROGRAMS += test/mpi/locality test/mpi/locality_named
test_mpi_locality_SOURCES = test/mpi/locality.c
test_mpi_locality_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_locality_named_SOURCES = $(test_mpi_locality_SOURCES)
test_mpi_locality_named_LDADD = $(test_mpi_locality_LDADD)
TESTS += test/mpi/locality test/mpi/locality_named
# The library's MPI_T performance variables and category, read as a tool would.
check_PROGRAMS += test/mpi/mpit
test_mpi_mpit_SOURCES = test/mpi/mpit.c
test_mpi_mpit_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/mpit
# Statuses: MPI_ERROR left alone by probes and single completions, and
# truncation as MPICH reports it for host buffers (p2p_status); what a pending
# operation uses outlives the user's MPI_Type_free and MPI_Comm_free
# (p2p_typefree).  *_chunked: pieces by MPI, 64 KiB pool.
check_PROGRAMS += test/mpi/p2p_status test/mpi/p2p_status_chunked
test_mpi_p2p_status_SOURCES = test/mpi/p2p_status.c test/mpi/p2p_common.h
test_mpi_p2p_status_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_p2p_status_chunked_SOURCES = $(test_mpi_p2p_status_SOURCES)
test_mpi_p2p_status_chunked_LDADD = $(test_mpi_p2p_status_LDADD)
TESTS += test/mpi/p2p_status test/mpi/p2p_status_chunked
# Partitioned communication and MPI_Buffer_attach of a device buffer.
check_PROGRAMS += test/mpi/p2p_partitioned
test_mpi_p2p_partitioned_SOURCES = test/mpi/p2p_partitioned.c test/mpi/p2p_common.h
test_mpi_p2p_partitioned_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/p2p_partitioned
# MPI_Isendrecv(_replace)(_c): host and device on each side, in pieces too.
check_PROGRAMS += test/mpi/p2p_isendrecv test/mpi/p2p_isendrecv_chunked
test_mpi_p2p_isendrecv_SOURCES = test/mpi/p2p_isendrecv.c test/mpi/p2p_common.h
test_mpi_p2p_isendrecv_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_p2p_isendrecv_chunked_SOURCES = $(test_mpi_p2p_isendrecv_SOURCES)
test_mpi_p2p_isendrecv_chunked_LDADD = $(test_mpi_p2p_isendrecv_LDADD)
TESTS += test/mpi/p2p_isendrecv test/mpi/p2p_isendrecv_chunked
check_PROGRAMS += test/mpi/p2p_typefree test/mpi/p2p_typefree_chunked
test_mpi_p2p_typefree_SOURCES = test/mpi/p2p_typefree.c test/mpi/p2p_common.h
test_mpi_p2p_typefree_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_p2p_typefree_chunked_SOURCES = $(test_mpi_p2p_typefree_SOURCES)
test_mpi_p2p_typefree_chunked_LDADD = $(test_mpi_p2p_typefree_LDADD)
TESTS += test/mpi/p2p_typefree test/mpi/p2p_typefree_chunked
# Bad arguments with device buffers (issue 22, items 1 to 3): the error class
# MPICH gives the host form, never a signal, nothing written outside the
# user's buffer.
check_PROGRAMS += test/mpi/bad_args
test_mpi_bad_args_SOURCES = test/mpi/bad_args.c
test_mpi_bad_args_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/bad_args
# Contiguous data under every method, side and protocol launches no kernel
# (read through MPI_T, test/mpi/mpit_read.c); *_plain, *_chunked and
# *_chunked_mpi set the protocol, *_pipeline the discrete-GPU paths.
check_PROGRAMS += test/mpi/p2p_contig test/mpi/p2p_contig_plain test/mpi/p2p_contig_chunked \
	test/mpi/p2p_contig_chunked_mpi test/mpi/p2p_contig_pipeline
test_mpi_p2p_contig_SOURCES = test/mpi/p2p_contig.c test/mpi/p2p_common.h test/mpi/mpit_read.c \
	test/mpi/mpit_read.h
test_mpi_p2p_contig_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_p2p_contig_plain_SOURCES = $(test_mpi_p2p_contig_SOURCES)
test_mpi_p2p_contig_plain_LDADD = $(test_mpi_p2p_contig_LDADD)
test_mpi_p2p_contig_chunked_SOURCES = $(test_mpi_p2p_contig_SOURCES)
test_mpi_p2p_contig_chunked_LDADD = $(test_mpi_p2p_contig_LDADD)
test_mpi_p2p_contig_chunked_mpi_SOURCES = $(test_mpi_p2p_contig_SOURCES)
test_mpi_p2p_contig_chunked_mpi_LDADD = $(test_mpi_p2p_contig_LDADD)
test_mpi_p2p_contig_pipeline_SOURCES = $(test_mpi_p2p_contig_SOURCES)
test_mpi_p2p_contig_pipeline_LDADD = $(test_mpi_p2p_contig_LDADD)
TESTS += test/mpi/p2p_contig test/mpi/p2p_contig_plain test/mpi/p2p_contig_chunked \
	test/mpi/p2p_contig_chunked_mpi test/mpi/p2p_contig_pipeline
# The bad-input generator (issue 22): random hostile datatypes, pointers around
# allocation ends and freed ranges, and every interposed call; an error class or
# the PMPI result on host copies, never a signal.  `badgen --list` names its
# categories; --seed/--first/--cases replay a case, --only/--skip select them.
check_PROGRAMS += test/mpi/badgen
test_mpi_badgen_SOURCES = test/mpi/badgen.c test/mpi/typegen.c test/mpi/typegen.h
test_mpi_badgen_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/badgen
EXTRA_DIST += test/mpi/badgen-survey.sh
# The enqueue calls (issue 23) at each thread level the application may ask
# for (the testlist's arg): ordering, errors as event statuses, requests,
# persistent starts, files.
check_PROGRAMS += test/mpi/enqueue_single test/mpi/enqueue_funneled \
	test/mpi/enqueue_serialized test/mpi/enqueue_multiple
test_mpi_enqueue_single_SOURCES = test/mpi/enqueue.c test/mpi/p2p_common.h
test_mpi_enqueue_single_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_enqueue_funneled_SOURCES = $(test_mpi_enqueue_single_SOURCES)
test_mpi_enqueue_funneled_LDADD = $(test_mpi_enqueue_single_LDADD)
test_mpi_enqueue_serialized_SOURCES = $(test_mpi_enqueue_single_SOURCES)
test_mpi_enqueue_serialized_LDADD = $(test_mpi_enqueue_single_LDADD)
test_mpi_enqueue_multiple_SOURCES = $(test_mpi_enqueue_single_SOURCES)
test_mpi_enqueue_multiple_LDADD = $(test_mpi_enqueue_single_LDADD)
TESTS += test/mpi/enqueue_single test/mpi/enqueue_funneled test/mpi/enqueue_serialized \
	test/mpi/enqueue_multiple
# MPIGPU_ENQUEUE_PROGRESS=off: MPI at the level asked for, the calls refused.
check_PROGRAMS += test/mpi/enqueue_off
test_mpi_enqueue_off_SOURCES = $(test_mpi_enqueue_single_SOURCES)
test_mpi_enqueue_off_LDADD = $(test_mpi_enqueue_single_LDADD)
TESTS += test/mpi/enqueue_off
# Every pack and unpack in the point-to-point engine on a queue of its own
# (MPIGPU_ENQUEUE_QUEUE_MAX=0), pipelined as on a GPU in chunks of 4 KiB, so
# that the file calls go in pieces.
check_PROGRAMS += test/mpi/enqueue_engine
test_mpi_enqueue_engine_SOURCES = $(test_mpi_enqueue_single_SOURCES)
test_mpi_enqueue_engine_LDADD = $(test_mpi_enqueue_single_LDADD)
TESTS += test/mpi/enqueue_engine
# MPI-IO on device buffers: every access mode against the same call on host
# buffers (file_io), on 1, 2 and 4 ranks; every window call refused.
check_PROGRAMS += test/mpi/file_io test/mpi/file_io2 test/mpi/file_io4 test/mpi/win_refuse
test_mpi_file_io_SOURCES = test/mpi/file_io.c test/mpi/p2p_common.h test/mpi/mpit_read.c \
	test/mpi/mpit_read.h
test_mpi_file_io_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_file_io2_SOURCES = $(test_mpi_file_io_SOURCES)
test_mpi_file_io2_LDADD = $(test_mpi_file_io_LDADD)
test_mpi_file_io4_SOURCES = $(test_mpi_file_io_SOURCES)
test_mpi_file_io4_LDADD = $(test_mpi_file_io_LDADD)
check_PROGRAMS += test/mpi/file_io_mt
test_mpi_file_io_mt_SOURCES = $(test_mpi_file_io_SOURCES)
test_mpi_file_io_mt_LDADD = $(test_mpi_file_io_LDADD)
TESTS += test/mpi/file_io_mt
test_mpi_win_refuse_SOURCES = test/mpi/win_refuse.c test/mpi/p2p_common.h
test_mpi_win_refuse_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/file_io test/mpi/file_io2 test/mpi/file_io4 test/mpi/win_refuse
# Host-coherent device memory (MPIX_Gpu_malloc_shared): zero copy on PoCL,
# and page protection with lazy and rolling update (shared_protocol:
# MPIGPU_SHARED_ZERO_COPY=0, small blocks, a small dirty bound).
check_PROGRAMS += test/mpi/shared test/mpi/shared_protocol
test_mpi_shared_SOURCES = test/mpi/shared.c
test_mpi_shared_LDADD = libmpigpu.la $(OPENCL_LIBS) -lpthread
test_mpi_shared_protocol_SOURCES = $(test_mpi_shared_SOURCES)
test_mpi_shared_protocol_LDADD = $(test_mpi_shared_LDADD)
TESTS += test/mpi/shared test/mpi/shared_protocol

# Collectives on device addresses (src/coll): one table-driven program at 1,
# 2, 3 and 4 ranks (the testlist), under MPI_THREAD_MULTIPLE (coll_mt) and
# under MPIGPU_PACK=host (coll_host: the span is staged and written back whole).
check_PROGRAMS += test/mpi/coll test/mpi/coll2 test/mpi/coll3 test/mpi/coll4 test/mpi/coll_mt \
	test/mpi/coll_host
test_mpi_coll_SOURCES = test/mpi/coll.c
test_mpi_coll_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_coll2_SOURCES = $(test_mpi_coll_SOURCES)
test_mpi_coll2_LDADD = $(test_mpi_coll_LDADD)
test_mpi_coll3_SOURCES = $(test_mpi_coll_SOURCES)
test_mpi_coll3_LDADD = $(test_mpi_coll_LDADD)
test_mpi_coll4_SOURCES = $(test_mpi_coll_SOURCES)
test_mpi_coll4_LDADD = $(test_mpi_coll_LDADD)
test_mpi_coll_mt_SOURCES = $(test_mpi_coll_SOURCES)
test_mpi_coll_mt_LDADD = $(test_mpi_coll_LDADD)
test_mpi_coll_host_SOURCES = $(test_mpi_coll_SOURCES)
test_mpi_coll_host_LDADD = $(test_mpi_coll_LDADD)
TESTS += test/mpi/coll test/mpi/coll2 test/mpi/coll3 test/mpi/coll4 test/mpi/coll_mt \
	test/mpi/coll_host
# Reductions that combine on the device (src/coll/reduce.c), at 1 to 4 ranks,
# under auto around MPIGPU_COLL_REDUCE_MIN (coll_red_auto), and with buffers
# that do not share host memory, messages in pieces (coll_red_pipe).
check_PROGRAMS += test/mpi/coll_red test/mpi/coll_red2 test/mpi/coll_red3 test/mpi/coll_red4 \
	test/mpi/coll_red_auto test/mpi/coll_red_pipe
test_mpi_coll_red_SOURCES = test/mpi/coll_red.c test/mpi/mpit_read.c test/mpi/mpit_read.h
test_mpi_coll_red_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_coll_red2_SOURCES = $(test_mpi_coll_red_SOURCES)
test_mpi_coll_red2_LDADD = $(test_mpi_coll_red_LDADD)
test_mpi_coll_red3_SOURCES = $(test_mpi_coll_red_SOURCES)
test_mpi_coll_red3_LDADD = $(test_mpi_coll_red_LDADD)
test_mpi_coll_red4_SOURCES = $(test_mpi_coll_red_SOURCES)
test_mpi_coll_red4_LDADD = $(test_mpi_coll_red_LDADD)
test_mpi_coll_red_auto_SOURCES = $(test_mpi_coll_red_SOURCES)
test_mpi_coll_red_auto_LDADD = $(test_mpi_coll_red_LDADD)
test_mpi_coll_red_pipe_SOURCES = $(test_mpi_coll_red_SOURCES)
test_mpi_coll_red_pipe_LDADD = $(test_mpi_coll_red_LDADD)
TESTS += test/mpi/coll_red test/mpi/coll_red2 test/mpi/coll_red3 test/mpi/coll_red4 \
	test/mpi/coll_red_auto test/mpi/coll_red_pipe

# Pipelined collectives (src/coll/pipe.c): Bcast, Allreduce and Reduce in
# chunks, device and host buffers mixed in one call, at 1 to 4 ranks; with
# calls that combine on the device beside them (coll_pipe_red), on
# zero-copy buffers, which never pipeline (coll_pipe_zc), and under the
# default MPIGPU_COLL_PIPELINE=on, where the block-wise calls do not
# (coll_pipe_on; the others set all).
check_PROGRAMS += test/mpi/coll_pipe test/mpi/coll_pipe1 test/mpi/coll_pipe3 test/mpi/coll_pipe4 \
	test/mpi/coll_pipe_red test/mpi/coll_pipe_zc test/mpi/coll_pipe_on
test_mpi_coll_pipe_SOURCES = test/mpi/coll_pipe.c test/mpi/mpit_read.c test/mpi/mpit_read.h
test_mpi_coll_pipe_LDADD = libmpigpu.la $(OPENCL_LIBS)
test_mpi_coll_pipe1_SOURCES = $(test_mpi_coll_pipe_SOURCES)
test_mpi_coll_pipe1_LDADD = $(test_mpi_coll_pipe_LDADD)
test_mpi_coll_pipe3_SOURCES = $(test_mpi_coll_pipe_SOURCES)
test_mpi_coll_pipe3_LDADD = $(test_mpi_coll_pipe_LDADD)
test_mpi_coll_pipe4_SOURCES = $(test_mpi_coll_pipe_SOURCES)
test_mpi_coll_pipe4_LDADD = $(test_mpi_coll_pipe_LDADD)
test_mpi_coll_pipe_red_SOURCES = $(test_mpi_coll_pipe_SOURCES)
test_mpi_coll_pipe_red_LDADD = $(test_mpi_coll_pipe_LDADD)
test_mpi_coll_pipe_zc_SOURCES = $(test_mpi_coll_pipe_SOURCES)
test_mpi_coll_pipe_zc_LDADD = $(test_mpi_coll_pipe_LDADD)
test_mpi_coll_pipe_on_SOURCES = $(test_mpi_coll_pipe_SOURCES)
test_mpi_coll_pipe_on_LDADD = $(test_mpi_coll_pipe_LDADD)
TESTS += test/mpi/coll_pipe test/mpi/coll_pipe1 test/mpi/coll_pipe3 test/mpi/coll_pipe4 \
	test/mpi/coll_pipe_red test/mpi/coll_pipe_zc test/mpi/coll_pipe_on

# Fused packing of the all-to-all collectives (src/coll/packed.c): one pack
# and one unpack launch per call whatever the number of derived-type blocks,
# counted through MPI_T under MPIGPU_PACK=kernel (the testlist).
check_PROGRAMS += test/mpi/coll_fused
test_mpi_coll_fused_SOURCES = test/mpi/coll_fused.c test/mpi/mpit_read.c test/mpi/mpit_read.h
test_mpi_coll_fused_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += test/mpi/coll_fused
# The same packed one pack engine call per block (MPIGPU_COLL_PACKED=blocks),
# and on a GPU shared with kernels that cost 100 ms more, where the model
# must choose per-block copies for vectors of many runs, and where auto
# times both ways.
check_PROGRAMS += test/mpi/coll_fused_blocks test/mpi/coll_fused_shared test/mpi/coll_fused_measure
test_mpi_coll_fused_blocks_SOURCES = $(test_mpi_coll_fused_SOURCES)
test_mpi_coll_fused_blocks_LDADD = $(test_mpi_coll_fused_LDADD)
test_mpi_coll_fused_shared_SOURCES = $(test_mpi_coll_fused_SOURCES)
test_mpi_coll_fused_shared_LDADD = $(test_mpi_coll_fused_LDADD)
test_mpi_coll_fused_measure_SOURCES = $(test_mpi_coll_fused_SOURCES)
test_mpi_coll_fused_measure_LDADD = $(test_mpi_coll_fused_LDADD)
TESTS += test/mpi/coll_fused_blocks test/mpi/coll_fused_shared test/mpi/coll_fused_measure
