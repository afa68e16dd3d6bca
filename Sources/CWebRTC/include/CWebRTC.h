#ifndef CWEBRTC_H
#define CWEBRTC_H
// The C glue of the WebRTC transport: ICE (libnice on a GLib loop of its own), DTLS 1.2 (OpenSSL
// on memory BIOs) and SRTP (libsrtp2). Plain C types only: nothing of GLib, OpenSSL or libsrtp2
// is visible to Swift. One header per library.
#include "cwebrtc_ice.h"
#include "cwebrtc_dtls.h"
#include "cwebrtc_srtp.h"
#include "cwebrtc_openssl.h"
#endif
