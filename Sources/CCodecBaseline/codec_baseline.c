#include "codec_baseline.h"
int mp_baseline_placeholder(void) { return 0; }
