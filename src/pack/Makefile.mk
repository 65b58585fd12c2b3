# src/pack: the pack engine (method choice, staging, launches, pipelining) and
# its kernels/.  Its face: mgpk.h.  Below it: datatype, common.
noinst_LTLIBRARIES += libmgpk.la
MG_PACK_INC = -I$(top_srcdir)/src/pack $(MG_DATATYPE_INC)
libmgpk_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_PACK_INC) -I$(top_builddir)/src/pack/kernels
nodist_libmgpk_la_SOURCES = src/pack/kernels/mgpk_sources.c
libmgpk_la_SOURCES = src/pack/mgpk_impl.h src/pack/pk_ctx.c src/pack/pk_prog.c \
	src/pack/pk_upload.c src/pack/pk_kernel.c src/pack/pk_copy.c src/pack/pk_pack.c \
	src/pack/pk_hcopy.c src/pack/pk_calib.c src/pack/pk_host.c
noinst_HEADERS += src/pack/mgpk.h
include src/pack/kernels/Makefile.mk
