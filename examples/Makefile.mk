# Examples, built and run by make check with the flags that
# `pkg-config --cflags --libs mpigpu` gives an installed copy (mpigpu.pc:
# the public header's folder, libmpigpu, OpenCL); `make installcheck`
# builds them again against the installed mpigpu.pc and runs them
# (--define-prefix: the prefix where the .pc file lies, DESTDIR included).
check_PROGRAMS += examples/jacobi
examples_jacobi_SOURCES = examples/jacobi.c
examples_jacobi_CPPFLAGS = -I$(top_srcdir)/include $(OPENCL_CFLAGS)
examples_jacobi_LDADD = libmpigpu.la $(OPENCL_LIBS) -lm
TESTS += examples/jacobi
check_PROGRAMS += examples/shared_memory
examples_shared_memory_SOURCES = examples/shared_memory.c
examples_shared_memory_CPPFLAGS = -I$(top_srcdir)/include $(OPENCL_CFLAGS)
examples_shared_memory_LDADD = libmpigpu.la $(OPENCL_LIBS)
TESTS += examples/shared_memory

installcheck-local:
	PKG_CONFIG_PATH="$(DESTDIR)$(libdir)/pkgconfig$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH}" && \
	export PKG_CONFIG_PATH && \
	$(CC) $(top_srcdir)/examples/jacobi.c $$(pkg-config --define-prefix --cflags --libs mpigpu) -lm \
		-o installcheck-jacobi && \
	$(MPIEXEC) -n 2 ./installcheck-jacobi | tail -n 1 | grep '^verified' && \
	rm -f installcheck-jacobi && \
	$(CC) $(top_srcdir)/examples/shared_memory.c $$(pkg-config --define-prefix --cflags --libs mpigpu) \
		-o installcheck-shared_memory && \
	$(MPIEXEC) -n 2 env MPIGPU_SHARED_ZERO_COPY=0 ./installcheck-shared_memory | tail -n 1 | \
		grep '^verified' && \
	rm -f installcheck-shared_memory
