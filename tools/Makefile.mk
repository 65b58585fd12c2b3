# Installed programs (API.md "Programs"): the benchmarks, whose hand-written
# baseline kernels (hand.cl) are embedded at build time.
PERF_COMMON = tools/perf_common.c tools/perf_common.h
bin_PROGRAMS += mpigpu-packbench mpigpu-pingpong mpigpu-halo mpigpu-collbench
mpigpu_packbench_SOURCES = tools/packbench.c $(PERF_COMMON)
mpigpu_packbench_LDADD = libmpigpu.la $(OPENCL_LIBS) -lm
mpigpu_pingpong_SOURCES = tools/pingpong.c $(PERF_COMMON)
mpigpu_pingpong_LDADD = libmpigpu.la $(OPENCL_LIBS) -lm
mpigpu_halo_SOURCES = tools/halo.c $(PERF_COMMON)
mpigpu_halo_LDADD = libmpigpu.la $(OPENCL_LIBS) -lm
mpigpu_collbench_SOURCES = tools/collbench.c $(PERF_COMMON)
mpigpu_collbench_LDADD = libmpigpu.la $(OPENCL_LIBS) -lm
nodist_mpigpu_collbench_SOURCES = tools/hand_src.c
nodist_mpigpu_packbench_SOURCES = tools/hand_src.c
nodist_mpigpu_halo_SOURCES = tools/hand_src.c
nodist_mpigpu_pingpong_SOURCES = tools/hand_src.c
tools/hand_src.c: $(top_srcdir)/tools/hand.cl $(top_srcdir)/build-aux/embed-text.sh
	@mkdir -p tools
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/build-aux/embed-text.sh $@ perf_hand_src $(top_srcdir)/tools/hand.cl
BUILT_SOURCES += tools/hand_src.c
CLEANFILES += tools/hand_src.c
EXTRA_DIST += tools/hand.cl build-aux/embed-text.sh tools/plot.sh
# A short ping-pong on 2 ranks in make check (arguments in test/mpi/testlist),
# and its method columns (read through MPI_T) under --method host and others.
TESTS += mpigpu-pingpong test/tools/pingpong.sh
# A short collective benchmark on 2 ranks (testlist): every collective once.
TESTS += mpigpu-collbench
EXTRA_DIST += test/tools/pingpong.sh
# mpigpu-halo on 8 ranks: every mode verified against the host computation,
# one field for all modes and process grids, a corrupted face caught.
TESTS += test/tools/halo.sh
EXTRA_DIST += test/tools/halo.sh test/perf/halo-plot.sh test/perf/halo-bench.sh
# mpigpu-info: what the library sees and would do here, and its settings
# (--params).  It reaches the device layer's locality and the pack engine's
# method table through their faces, which libmpigpu.so does not export: it
# links the folders' libraries, as the white-box tests do.
bin_PROGRAMS += mpigpu-info
mpigpu_info_SOURCES = tools/info.c
mpigpu_info_LDADD = $(MG_ALL_LIBS) $(MG_ALL_LIBS_DEPS)
# mpigpu-info runs as a singleton; the user guide's settings tables match the
# settings table.
TESTS += test/tools/info.sh test/tools/params.sh
EXTRA_DIST += test/tools/info.sh test/tools/params.sh
