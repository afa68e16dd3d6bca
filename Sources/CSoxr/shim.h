#ifndef CSOXR_SHIM_H
#define CSOXR_SHIM_H
// libsoxr: the resampler behind sox and ffmpeg's aresample=resampler=soxr. Its API is plain C;
// the shim only gathers the header under the module.
#include <soxr.h>
#endif
