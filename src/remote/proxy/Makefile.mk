# src/remote/proxy: mpigpu-proxy, the server that runs remote clients'
# OpenCL calls on local devices.  A program; no folder includes its headers.
# Below it: transport, wire, remote/common, common.
MG_PROXY_INC = -I$(top_srcdir)/src/remote/proxy $(MG_TRANSPORT_INC) $(MG_RCOMMON_INC)
if REMOTE
bin_PROGRAMS += mpigpu-proxy
mpigpu_proxy_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_PROXY_INC)
mpigpu_proxy_SOURCES = src/remote/proxy/proxy_main.c src/remote/proxy/proxy_session.c \
	src/remote/proxy/proxy_ops.c src/remote/proxy/proxy_program.c \
	src/remote/proxy/proxy_enqueue.c src/remote/proxy/proxy_bulk.c \
	src/remote/proxy/proxy_map.c src/remote/proxy/proxy_shm.c src/remote/proxy/proxy_cma.c \
	src/remote/proxy/proxy_stripe.c src/remote/proxy/proxy_limits.c src/remote/proxy/proxy_image.c \
	src/remote/proxy/proxy_peer.c src/remote/proxy/proxy.h
mpigpu_proxy_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
mpigpu_proxy_LDADD = libmgtr.la libmgw.la libmgrc.la $(OPENCL_LIBS) $(SODIUM_LIBS) $(LIBCRYPTO_LIBS)
endif

# libFuzzer target of the proxy's decoder (fuzz_wire.c): `make fuzz` runs it
# for FUZZ_TIME seconds (default 60) over fuzz/corpus; make check runs a
# short pass of each of its modes (test/remote/fuzz.sh): MGRM_FUZZ_MODE=dry
# (the default: no device), real (the handlers against the first OpenCL
# device), handshake, bulk.
FUZZ_SRC = src/remote/proxy/fuzz_wire.c src/remote/proxy/proxy_session.c \
	src/remote/proxy/proxy_ops.c src/remote/proxy/proxy_program.c \
	src/remote/proxy/proxy_enqueue.c src/remote/proxy/proxy_bulk.c \
	src/remote/proxy/proxy_map.c src/remote/proxy/proxy_shm.c src/remote/proxy/proxy_cma.c \
	src/remote/proxy/proxy_stripe.c src/remote/proxy/proxy_limits.c src/remote/proxy/proxy_peer.c \
	src/remote/proxy/proxy_image.c \
	src/remote/transport/bulk_stream.c \
	src/remote/transport/bulk_shm.c src/remote/transport/bulk_cma.c \
	src/remote/transport/transport_tcp.c src/remote/transport/handshake.c \
	src/remote/transport/secure.c src/remote/wire/wire.c src/remote/wire/auth.c \
	src/remote/common/clformat.c \
	src/common/log.c src/common/mgparam.c src/common/mgparam_table.c
FUZZ_HDR = src/remote/proxy/proxy.h src/remote/transport/transport.h \
	src/remote/transport/bulk.h src/remote/wire/wire.h src/remote/wire/messages.h \
	src/remote/common/clformat.h \
	src/common/mglog.h \
	src/common/mgclock.h src/common/mgspin.h src/common/mgparam.h
EXTRA_DIST += src/remote/proxy/fuzz_wire.c
FUZZ_TIME = 60
.PHONY: fuzz
if HAVE_FUZZ
fuzz/mgrm-fuzz: $(FUZZ_SRC) $(FUZZ_HDR)
	@$(MKDIR_P) fuzz
	$(AM_V_CCLD)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -I$(top_builddir) $(MG_PROXY_INC) $(OPENCL_CFLAGS) \
	  $(SODIUM_CFLAGS) $(LIBCRYPTO_CFLAGS) $(addprefix $(top_srcdir)/,$(FUZZ_SRC)) -o $@ \
	  $(OPENCL_LIBS) $(SODIUM_LIBS) $(LIBCRYPTO_LIBS) -pthread
fuzz: fuzz/mgrm-fuzz
	@$(MKDIR_P) fuzz/corpus
	fuzz/mgrm-fuzz -max_total_time=$(FUZZ_TIME) -max_len=4096 fuzz/corpus
check_SCRIPTS += fuzz/mgrm-fuzz
CLEANFILES += fuzz/mgrm-fuzz
else
fuzz:
	@echo "make fuzz needs clang with -fsanitize=fuzzer (configure found none)"; exit 1
endif
