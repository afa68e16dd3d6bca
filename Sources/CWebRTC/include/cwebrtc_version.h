#ifndef CWEBRTC_VERSION_H
#define CWEBRTC_VERSION_H
/// The versions of the C libraries linked, as "libnice X, libsrtp2 Y, OpenSSL Z" into `buffer`.
void cwebrtc_library_versions(char *buffer, int capacity);
#endif
