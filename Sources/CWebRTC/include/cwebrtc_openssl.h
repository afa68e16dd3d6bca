#ifndef CWEBRTC_OPENSSL_H
#define CWEBRTC_OPENSSL_H
// OpenSSL's process-wide state is kept until the process ends (OPENSSL_INIT_NO_ATEXIT): see
// openssl_lifetime.c. Runs when the library is loaded; callers that initialise OpenSSL (libcurl)
// call it first as well, for builds that drop the load-time call. Idempotent.
void cwebrtc_keep_openssl_until_exit(void);
#endif
