// OpenSSL's process-wide state lives until the process ends.
//
// By default OpenSSL frees that state (providers, algorithm caches, locks) from an atexit
// handler. A process's other threads keep running while `exit` runs the handlers: an engine's
// decode workers hashing pictures (MD5), libdispatch's threads releasing a DTLS association or
// an SRTP session, libcurl's transfer thread closing a TLS connection. Any of them reaching
// OpenSSL then works on freed memory, and the process that was ending cleanly crashes instead.
// OpenSSL's own option for this, OPENSSL_INIT_NO_ATEXIT, takes effect only in the first
// initialisation, so it is given when the library is loaded, before any OpenSSL use (libcurl's
// included), and again before libcurl initialises OpenSSL, for a build that links this file
// from an archive and so drops the load-time call. The memory goes back with the process;
// nothing is flushed or written there. Valgrind counts it as still reachable, not as lost.
// A host process that initialised OpenSSL before loading the library keeps its own choice.
#include "cwebrtc_openssl.h"

#include <openssl/crypto.h>

__attribute__((constructor)) void cwebrtc_keep_openssl_until_exit(void) {
    (void)OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}
