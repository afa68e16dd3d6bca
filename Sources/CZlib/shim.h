#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H
// zlib, for the deflate stream and CRC-32 of PNG snapshots. Plain C API: no wrappers needed.
#include <zlib.h>
#endif
