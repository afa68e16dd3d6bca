#ifndef CSRTP_SHIM_H
#define CSRTP_SHIM_H
// libsrtp2: SRTP and SRTCP protection (RFC 3711) with keys from DTLS-SRTP (RFC 5764).
#include <srtp2/srtp.h>
#endif
