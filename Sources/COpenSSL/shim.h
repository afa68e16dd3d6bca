#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
// OpenSSL's libssl: DTLS 1.2 with the use_srtp extension, for DTLS-SRTP key agreement.
#include <openssl/ssl.h>
#endif
