# OpenCL C kernels, embedded into the library at build time.
MGPK_KERNELS =
EXTRA_DIST += $(MGPK_KERNELS) build-aux/embed-kernels.sh
src/kernels/mgpk_sources.c: $(MGPK_KERNELS) $(top_srcdir)/src/include/mgdt_format.h $(top_srcdir)/build-aux/embed-kernels.sh
	@mkdir -p src/kernels
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/build-aux/embed-kernels.sh $@ $(top_srcdir)/src/include/mgdt_format.h $(addprefix $(top_srcdir)/,$(MGPK_KERNELS))
BUILT_SOURCES += src/kernels/mgpk_sources.c
CLEANFILES += src/kernels/mgpk_sources.c
