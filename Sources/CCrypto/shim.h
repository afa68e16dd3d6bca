#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H
// OpenSSL's libcrypto, for the MD5 digests of decoded pictures (vpxdec --md5): its EVP digest API.
#include <openssl/evp.h>
#endif
