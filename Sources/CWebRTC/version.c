#include "cwebrtc_version.h"
#include <agent.h>
#include <openssl/crypto.h>
#include <srtp2/srtp.h>
#include <stdio.h>

void cwebrtc_library_versions(char *buffer, int capacity) {
    snprintf(buffer, (size_t)capacity, "libsrtp2 %s, %s", srtp_get_version_string(), OpenSSL_version(OPENSSL_VERSION));
}
