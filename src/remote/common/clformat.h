/* src/remote/common: what the client and the proxy both know about OpenCL
 * objects (not the wire's: src/remote/wire stays free of OpenCL).  Each
 * side defines CL_TARGET_OPENCL_VERSION before it includes this. */
#ifndef MGRC_CLFORMAT_H
#define MGRC_CLFORMAT_H

#include <CL/cl.h>
#include <stddef.h>

/* Bytes of one pixel of the image format (order, type), or 0 for a pair
 * that OpenCL 1.2 does not define (an unknown order or type, CL_RGB with a
 * type of one value per channel, a packed type with another order than
 * CL_RGB or CL_RGBx).  The client refuses a format of 0 bytes, and so does
 * the proxy: no image is ever sized by a guess. */
size_t mgrc_pixel_size(cl_channel_order order, cl_channel_type type);

#endif
