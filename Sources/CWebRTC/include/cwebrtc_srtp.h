#ifndef CWEBRTC_SRTP_H
#define CWEBRTC_SRTP_H
#endif
