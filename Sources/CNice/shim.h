#ifndef CNICE_SHIM_H
#define CNICE_SHIM_H
// libnice (ICE, RFC 8445) and the GLib it runs on. Only the C glue in CWebRTC includes this:
// nothing of GLib reaches Swift.
#include <agent.h>
#endif
