# The pack engine: method choice, staging, launches, pipelining.
noinst_LTLIBRARIES += libmgpk.la
nodist_libmgpk_la_SOURCES = src/kernels/mgpk_sources.c
libmgpk_la_SOURCES = src/pack/mgpk_impl.h src/pack/pk_ctx.c src/pack/pk_prog.c \
	src/pack/pk_upload.c src/pack/pk_kernel.c src/pack/pk_copy.c src/pack/pk_pack.c \
	src/pack/pk_hcopy.c src/pack/pk_calib.c src/pack/pk_host.c
