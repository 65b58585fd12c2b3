/* src/remote/common: image formats (clformat.h). */
#define CL_TARGET_OPENCL_VERSION 120
#include "clformat.h"

size_t mgrc_pixel_size(cl_channel_order order, cl_channel_type type)
{
    size_t ch, sz;
    switch (order) {
    case CL_R:
    case CL_A:
    case CL_INTENSITY:
    case CL_LUMINANCE:
    case CL_Rx:
    case CL_DEPTH:
        ch = 1;
        break;
    case CL_RG:
    case CL_RA:
    case CL_RGx:
        ch = 2;
        break;
    case CL_RGB:
    case CL_RGBx:
        ch = 3;
        break;
    case CL_RGBA:
    case CL_BGRA:
    case CL_ARGB:
        ch = 4;
        break;
    default:
        return 0;
    }
    switch (type) {
    case CL_SNORM_INT8:
    case CL_UNORM_INT8:
    case CL_SIGNED_INT8:
    case CL_UNSIGNED_INT8:
        sz = 1;
        break;
    case CL_SNORM_INT16:
    case CL_UNORM_INT16:
    case CL_SIGNED_INT16:
    case CL_UNSIGNED_INT16:
    case CL_HALF_FLOAT:
        sz = 2;
        break;
    case CL_SIGNED_INT32:
    case CL_UNSIGNED_INT32:
    case CL_FLOAT:
        sz = 4;
        break;
    /* the packed types: one value of all three channels, CL_RGB or CL_RGBx
       (ch 3) only */
    case CL_UNORM_SHORT_565:
    case CL_UNORM_SHORT_555:
        return ch == 3 ? 2 : 0;
    case CL_UNORM_INT_101010:
        return ch == 3 ? 4 : 0;
    default:
        return 0;
    }
    return ch == 3 ? 0 : ch * sz; /* CL_RGB and CL_RGBx only with the packed types */
}
