# OpenCL C kernels, embedded into the library at build time.
MGPK_KERNELS = src/pack/kernels/generic.cl src/pack/kernels/shape.cl
EXTRA_DIST += $(MGPK_KERNELS) build-aux/embed-kernels.sh
src/pack/kernels/mgpk_sources.c: $(MGPK_KERNELS) $(top_srcdir)/src/datatype/mgdt_format.h $(top_srcdir)/build-aux/embed-kernels.sh
	@mkdir -p src/pack/kernels
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/build-aux/embed-kernels.sh $@ $(top_srcdir)/src/datatype/mgdt_format.h $(addprefix $(top_srcdir)/,$(MGPK_KERNELS))
BUILT_SOURCES += src/pack/kernels/mgpk_sources.c
CLEANFILES += src/pack/kernels/mgpk_sources.c

# Every kernel once under Oclgrind (API misuse, data races, uninitialized
# reads); any diagnostic fails the target.  Not -q: that is --quick (first and
# last work-group only), which leaves bytes unpacked and fails the byte checks.
# -cl-opt-disable: LLVM's div/rem pairing emits `freeze`, which Oclgrind's
# uninitialized-value plugin aborts on.
MGPK_OCLGRIND_FLAGS = --check-api --data-races --uninitialized --build-options -cl-opt-disable
check-oclgrind: test/unit/test_pack$(EXEEXT)
if HAVE_OCLGRIND
	$(AM_V_at)log=test/unit/test_pack-oclgrind.log; \
	MGPK_TEST_SMALL=1 MGPK_TEST_OCLGRIND=1 CK_FORK=no $(OCLGRIND) $(MGPK_OCLGRIND_FLAGS) \
	    test/unit/test_pack$(EXEEXT) >$$log 2>&1; st=$$?; cat $$log; \
	if [ $$st -ne 0 ] || grep -v '^[0-9]*%: Checks:' $$log | \
	    grep -Eiq 'invalid|error|uninitiali[sz]ed|race'; then \
	    echo "check-oclgrind: FAILED (see $$log)"; exit 1; fi; \
	echo "check-oclgrind: passed"
else
	@echo "check-oclgrind: oclgrind not found (Debian: apt-get install oclgrind)"; exit 1
endif
CLEANFILES += test/unit/test_pack-oclgrind.log
