#ifndef CWEBRTC_ICE_H
#define CWEBRTC_ICE_H
#endif
