# src/device: settings, device choice and locality, contexts and their pack
# engines, device addresses (the registry), pinned memory, the staging pool.
# Its face: mgdev.h, registry.h, locality.h, staging.h, shared.h.  Below it: pack,
# datatype, common.
noinst_LTLIBRARIES += libmgdevice.la
MG_DEVICE_INC = -I$(top_srcdir)/src/device $(MG_PACK_INC)
libmgdevice_la_CPPFLAGS = $(MG_BASE_CPPFLAGS) $(MG_DEVICE_INC)
libmgdevice_la_SOURCES = src/device/settings.c src/device/device.c src/device/method.c \
	src/device/registry.c src/device/locality.c src/device/pinned.c src/device/staging.c \
	src/device/stats.c src/device/shared.c
noinst_HEADERS += src/device/mgdev.h src/device/registry.h src/device/locality.h \
	src/device/staging.h src/device/shared.h
