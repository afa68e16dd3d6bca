#ifndef CWEBRTC_DTLS_H
#define CWEBRTC_DTLS_H
#endif
