#ifndef CYUV_SHIM_H
#define CYUV_SHIM_H
// libyuv (Debian's libyuv-dev ships no pkg-config file): scaling, mirroring and colour
// conversion of I420 pictures, as WebRTC uses it. The C API needs no wrappers.
#include <libyuv.h>
#endif
