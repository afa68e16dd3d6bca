// OpenSSL's process-wide state lives until the process ends.
//
// By default OpenSSL frees that state (providers, algorithm caches, locks) from an atexit
// handler. A process's other threads keep running while `exit` runs the handlers: an engine's
// decode workers hashing pictures (MD5), libdispatch's threads releasing a DTLS association or
// an SRTP session, libcurl's transfer thread closing a TLS connection. Any of them reaching
// OpenSSL then works on freed memory, and the process that was ending cleanly crashes instead.
// OpenSSL's own option for this, OPENSSL_INIT_NO_ATEXIT, takes effect only in the first
// initialisation, so it is given when the library is loaded, before any OpenSSL use (libcurl's
// included). The memory goes back with the process, as it would after a crash; nothing is
// flushed or written there.
#include <openssl/crypto.h>

__attribute__((constructor)) static void cwebrtc_keep_openssl_until_exit(void) {
    (void)OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}
