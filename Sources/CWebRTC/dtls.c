// DTLS 1.2 for DTLS-SRTP on OpenSSL 3: received datagrams go through a memory BIO, outgoing
// datagrams through a BIO of our own whose every write is one datagram handed to the send
// callback (OpenSSL flushes its handshake buffer in pieces no larger than the MTU).
#include "cwebrtc_dtls.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct cwebrtc_dtls_certificate {
    X509 *x509;
    EVP_PKEY *key;
};

struct cwebrtc_dtls {
    SSL_CTX *context;
    SSL *ssl;
    BIO *incoming;
    int role;
    int connected;
    int failed;
    int peer_closed;
    int close_sent;
    unsigned int first_retransmit_us;
    cwebrtc_dtls_send_fn send;
    void *send_context;
    char remote_fingerprint[CWEBRTC_DTLS_FINGERPRINT_CAPACITY];
    char received_alert[96];
    char last_error[384];
};

static void set_error(char *buffer, size_t capacity, const char *format, ...) {
    if (!buffer || capacity == 0) return;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(buffer, capacity, format, arguments);
    va_end(arguments);
}

/// Appends OpenSSL's queued reasons to `buffer` and empties the queue.
static void append_openssl_errors(char *buffer, size_t capacity) {
    unsigned long code;
    while ((code = ERR_get_error()) != 0) {
        size_t used = strlen(buffer);
        if (used + 4 >= capacity) continue;
        buffer[used++] = ' ';
        buffer[used++] = '(';
        ERR_error_string_n(code, buffer + used, capacity - used - 1);
        used = strlen(buffer);
        if (used + 1 < capacity) {
            buffer[used] = ')';
            buffer[used + 1] = 0;
        }
    }
}

// MARK: - Certificate

static int fingerprint_of(X509 *x509, char *buffer, int capacity) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (capacity < CWEBRTC_DTLS_FINGERPRINT_CAPACITY) return CWEBRTC_DTLS_ERROR_INTERNAL;
    if (!X509_digest(x509, EVP_sha256(), digest, &length) || length != 32) return CWEBRTC_DTLS_ERROR_INTERNAL;
    static const char hex[] = "0123456789ABCDEF";
    for (unsigned int i = 0; i < length; i++) {
        buffer[i * 3] = hex[digest[i] >> 4];
        buffer[i * 3 + 1] = hex[digest[i] & 15];
        buffer[i * 3 + 2] = i + 1 < length ? ':' : 0;
    }
    return CWEBRTC_DTLS_OK;
}

cwebrtc_dtls_certificate *cwebrtc_dtls_certificate_generate(char *error, int error_capacity) {
    size_t capacity = error_capacity > 0 ? (size_t)error_capacity : 0;
    if (capacity) error[0] = 0;
    ERR_clear_error();
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x509 = X509_new();
    BIGNUM *serial = BN_new();
    X509_NAME *name = X509_NAME_new();
    int ok = key && x509 && serial && name;
    ok = ok && X509_set_version(x509, 2);
    ok = ok && BN_rand(serial, 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);
    ok = ok && BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x509));
    ok = ok && X509_gmtime_adj(X509_getm_notBefore(x509), -3600);
    ok = ok && X509_gmtime_adj(X509_getm_notAfter(x509), 30L * 24 * 3600);
    ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"MediaPipeline", -1, -1, 0);
    ok = ok && X509_set_subject_name(x509, name) && X509_set_issuer_name(x509, name);
    ok = ok && X509_set_pubkey(x509, key);
    ok = ok && X509_sign(x509, key, EVP_sha256()) > 0;
    BN_free(serial);
    X509_NAME_free(name);
    cwebrtc_dtls_certificate *certificate = ok ? calloc(1, sizeof *certificate) : NULL;
    if (!certificate) {
        set_error(error, capacity, "could not make a self-signed ECDSA P-256 certificate");
        if (capacity) append_openssl_errors(error, capacity);
        EVP_PKEY_free(key);
        X509_free(x509);
        return NULL;
    }
    certificate->x509 = x509;
    certificate->key = key;
    return certificate;
}

void cwebrtc_dtls_certificate_free(cwebrtc_dtls_certificate *certificate) {
    if (!certificate) return;
    X509_free(certificate->x509);
    EVP_PKEY_free(certificate->key);
    free(certificate);
}

int cwebrtc_dtls_certificate_fingerprint(const cwebrtc_dtls_certificate *certificate, char *buffer, int capacity) {
    return fingerprint_of(certificate->x509, buffer, capacity);
}

// MARK: - The outgoing BIO: one write, one datagram

static int datagram_write(BIO *bio, const char *data, int length) {
    cwebrtc_dtls *dtls = BIO_get_data(bio);
    if (length <= 0) return 0;
    dtls->send(dtls->send_context, (const uint8_t *)data, (size_t)length);
    return length;
}

static long datagram_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)bio;
    (void)number;
    (void)pointer;
    switch (command) {
    case BIO_CTRL_FLUSH: return 1;
    case BIO_CTRL_WPENDING:
    case BIO_CTRL_PENDING: return 0;
    case BIO_CTRL_DGRAM_QUERY_MTU:
    case BIO_CTRL_DGRAM_GET_MTU_OVERHEAD: return 0;
    default: return 0;
    }
}

static int datagram_create(BIO *bio) {
    BIO_set_init(bio, 1);
    return 1;
}

static BIO_METHOD *datagram_method;
static pthread_once_t datagram_method_once = PTHREAD_ONCE_INIT;

static void make_datagram_method(void) {
    BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "cwebrtc datagram");
    if (!method) return;
    BIO_meth_set_write(method, datagram_write);
    BIO_meth_set_ctrl(method, datagram_ctrl);
    BIO_meth_set_create(method, datagram_create);
    datagram_method = method;
}

// MARK: - Association

/// Every peer certificate is accepted here: the peer is authenticated by its fingerprint, which
/// is compared once the handshake completes.
static int accept_any_certificate(int preverified, X509_STORE_CTX *store) {
    (void)preverified;
    (void)store;
    return 1;
}

static int dtls_index = -1;
static pthread_once_t dtls_index_once = PTHREAD_ONCE_INIT;
static void make_dtls_index(void) { dtls_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL); }

/// Records alerts the peer sends us, to name them in errors.
static void info_callback(const SSL *ssl, int where, int value) {
    if (!(where & SSL_CB_ALERT) || !(where & SSL_CB_READ)) return;
    cwebrtc_dtls *dtls = SSL_get_ex_data(ssl, dtls_index);
    if (!dtls) return;
    snprintf(dtls->received_alert, sizeof dtls->received_alert, "%s %s", SSL_alert_type_string_long(value),
             SSL_alert_desc_string_long(value));
}

/// The first retransmission after `first_retransmit_us`, then doubling up to 8 s.
static unsigned int retransmit_timer(SSL *ssl, unsigned int previous_us) {
    cwebrtc_dtls *dtls = SSL_get_ex_data(ssl, dtls_index);
    if (previous_us == 0) return dtls ? dtls->first_retransmit_us : 150000;
    unsigned int next = previous_us * 2;
    return next > 8000000 ? 8000000 : next;
}

cwebrtc_dtls *cwebrtc_dtls_new(const cwebrtc_dtls_certificate *certificate, int role, const char *remote_fingerprint,
                               int mtu, int first_retransmit_ms, cwebrtc_dtls_send_fn send, void *send_context,
                               char *error, int error_capacity) {
    size_t capacity = error_capacity > 0 ? (size_t)error_capacity : 0;
    if (capacity) error[0] = 0;
    if (role != CWEBRTC_DTLS_ROLE_CLIENT && role != CWEBRTC_DTLS_ROLE_SERVER) {
        set_error(error, capacity, "role %d is neither client (0) nor server (1)", role);
        return NULL;
    }
    if (!remote_fingerprint || strlen(remote_fingerprint) != CWEBRTC_DTLS_FINGERPRINT_CAPACITY - 1) {
        set_error(error, capacity, "remote fingerprint \"%s\" is not 32 colon-separated hex bytes",
                  remote_fingerprint ? remote_fingerprint : "");
        return NULL;
    }
    if (mtu < 256 || mtu > 65507) {
        set_error(error, capacity, "MTU %d is outside 256…65507", mtu);
        return NULL;
    }
    if (first_retransmit_ms < 10 || first_retransmit_ms > 60000) {
        set_error(error, capacity, "first retransmit %d ms is outside 10…60000", first_retransmit_ms);
        return NULL;
    }
    pthread_once(&datagram_method_once, make_datagram_method);
    pthread_once(&dtls_index_once, make_dtls_index);
    if (!datagram_method || dtls_index < 0) {
        set_error(error, capacity, "OpenSSL could not register the datagram BIO");
        return NULL;
    }
    ERR_clear_error();
    cwebrtc_dtls *dtls = calloc(1, sizeof *dtls);
    if (!dtls) return NULL;
    dtls->role = role;
    dtls->send = send;
    dtls->send_context = send_context;
    dtls->first_retransmit_us = (unsigned int)first_retransmit_ms * 1000u;
    memcpy(dtls->remote_fingerprint, remote_fingerprint, CWEBRTC_DTLS_FINGERPRINT_CAPACITY);

    SSL_CTX *context = SSL_CTX_new(DTLS_method());
    dtls->context = context;
    int ok = context != NULL;
    ok = ok && SSL_CTX_set_min_proto_version(context, DTLS1_2_VERSION);
    ok = ok && SSL_CTX_use_certificate(context, certificate->x509) == 1;
    ok = ok && SSL_CTX_use_PrivateKey(context, certificate->key) == 1;
    ok = ok && SSL_CTX_check_private_key(context) == 1;
    // Returns 0 on success.
    ok = ok && SSL_CTX_set_tlsext_use_srtp(context, "SRTP_AES128_CM_SHA1_80:SRTP_AEAD_AES_128_GCM") == 0;
    if (ok) {
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any_certificate);
        SSL_CTX_set_read_ahead(context, 1);
        SSL_CTX_set_info_callback(context, info_callback);
    }
    SSL *ssl = ok ? SSL_new(context) : NULL;
    dtls->ssl = ssl;
    BIO *incoming = ssl ? BIO_new(BIO_s_mem()) : NULL;
    BIO *outgoing = incoming ? BIO_new(datagram_method) : NULL;
    ok = ok && ssl && incoming && outgoing;
    if (!ok) {
        set_error(error, capacity, "OpenSSL could not set up a DTLS 1.2 association");
        if (capacity) append_openssl_errors(error, capacity);
        BIO_free(incoming);
        BIO_free(outgoing);
        cwebrtc_dtls_free(dtls);
        return NULL;
    }
    BIO_set_mem_eof_return(incoming, -1);
    BIO_set_data(outgoing, dtls);
    SSL_set_bio(ssl, incoming, outgoing);
    dtls->incoming = incoming;
    SSL_set_ex_data(ssl, dtls_index, dtls);
    // No session tickets: DTLS-SRTP sessions are not resumed, and OpenSSL sizes the encrypted
    // ticket's fragments past the MTU (seen: 311 bytes at an MTU of 300).
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_TICKET);
    SSL_set_mtu(ssl, mtu);
    DTLS_set_link_mtu(ssl, mtu);
    DTLS_set_timer_cb(ssl, retransmit_timer);
    if (role == CWEBRTC_DTLS_ROLE_CLIENT)
        SSL_set_connect_state(ssl);
    else
        SSL_set_accept_state(ssl);
    return dtls;
}

void cwebrtc_dtls_free(cwebrtc_dtls *dtls) {
    if (!dtls) return;
    SSL_free(dtls->ssl);  // frees both BIOs
    SSL_CTX_free(dtls->context);
    free(dtls);
}

/// Fails the association with `status` and a sentence; returns `status`.
static int fail(cwebrtc_dtls *dtls, int status, const char *format, ...) {
    dtls->failed = status;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(dtls->last_error, sizeof dtls->last_error, format, arguments);
    va_end(arguments);
    append_openssl_errors(dtls->last_error, sizeof dtls->last_error);
    return status;
}

/// Once the handshake completes: the peer's fingerprint and the SRTP profile.
static int check_completed_handshake(cwebrtc_dtls *dtls) {
    X509 *peer = SSL_get1_peer_certificate(dtls->ssl);
    if (!peer) return fail(dtls, CWEBRTC_DTLS_ERROR_FINGERPRINT, "the peer presented no certificate");
    char fingerprint[CWEBRTC_DTLS_FINGERPRINT_CAPACITY];
    int status = fingerprint_of(peer, fingerprint, sizeof fingerprint);
    X509_free(peer);
    if (status != CWEBRTC_DTLS_OK)
        return fail(dtls, CWEBRTC_DTLS_ERROR_INTERNAL, "could not hash the peer's certificate");
    if (strcasecmp(fingerprint, dtls->remote_fingerprint) != 0)
        return fail(dtls, CWEBRTC_DTLS_ERROR_FINGERPRINT, "the peer's certificate has fingerprint %s, expected %s",
                    fingerprint, dtls->remote_fingerprint);
    if (cwebrtc_dtls_srtp_profile(dtls) == 0)
        return fail(dtls, CWEBRTC_DTLS_ERROR_NO_SRTP_PROFILE, "the peer agreed to no SRTP protection profile");
    dtls->connected = 1;
    return CWEBRTC_DTLS_OK;
}

/// Interprets a return value of SSL_do_handshake or SSL_read.
static int after_openssl_call(cwebrtc_dtls *dtls, int result, const char *what) {
    int code = SSL_get_error(dtls->ssl, result);
    switch (code) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        ERR_clear_error();
        return CWEBRTC_DTLS_OK;
    case SSL_ERROR_ZERO_RETURN:
        dtls->peer_closed = 1;
        ERR_clear_error();
        return CWEBRTC_DTLS_OK;
    default:
        if (dtls->received_alert[0])
            return fail(dtls, CWEBRTC_DTLS_ERROR_ALERT, "%s: the peer sent %s", what, dtls->received_alert);
        return fail(dtls, CWEBRTC_DTLS_ERROR_HANDSHAKE, "%s failed (SSL_get_error %d)", what, code);
    }
}

/// Drives the handshake, or after it reads (and drops) anything the peer sent.
static int advance(cwebrtc_dtls *dtls) {
    if (!dtls->connected) {
        int result = SSL_do_handshake(dtls->ssl);
        if (result == 1) return check_completed_handshake(dtls);
        int status = after_openssl_call(dtls, result, "the DTLS handshake");
        if (status != CWEBRTC_DTLS_OK) return status;
        if (dtls->peer_closed) return fail(dtls, CWEBRTC_DTLS_ERROR_ALERT, "the peer closed during the handshake");
        return CWEBRTC_DTLS_OK;
    }
    unsigned char scratch[2048];
    for (;;) {
        int result = SSL_read(dtls->ssl, scratch, sizeof scratch);
        if (result > 0) continue;  // no application data is expected over DTLS-SRTP: dropped
        return after_openssl_call(dtls, result, "reading DTLS");
    }
}

int cwebrtc_dtls_start(cwebrtc_dtls *dtls) {
    if (dtls->failed) return dtls->failed;
    if (dtls->role != CWEBRTC_DTLS_ROLE_CLIENT) return CWEBRTC_DTLS_OK;
    if (dtls->connected || SSL_in_before(dtls->ssl) == 0) {
        snprintf(dtls->last_error, sizeof dtls->last_error, "the DTLS client has already started");
        return CWEBRTC_DTLS_ERROR_STATE;
    }
    ERR_clear_error();
    return advance(dtls);
}

/// Whether `datagram` is a sequence of whole DTLS records (RFC 6347 4.1): content type 20…63
/// (RFC 7983), version 254.x, 13-byte header, the length field within the datagram.
static int check_records(cwebrtc_dtls *dtls, const uint8_t *datagram, size_t length) {
    size_t offset = 0;
    if (length == 0) {
        snprintf(dtls->last_error, sizeof dtls->last_error, "an empty datagram is no DTLS record");
        return CWEBRTC_DTLS_ERROR_MALFORMED;
    }
    while (offset < length) {
        const uint8_t *record = datagram + offset;
        size_t left = length - offset;
        if (record[0] < 20 || record[0] > 63) {
            snprintf(dtls->last_error, sizeof dtls->last_error,
                     "byte %zu of the datagram, %u, is no DTLS content type (20…63)", offset, record[0]);
            return CWEBRTC_DTLS_ERROR_MALFORMED;
        }
        if (left < 13) {
            snprintf(dtls->last_error, sizeof dtls->last_error,
                     "the DTLS record at byte %zu has %zu bytes, less than its 13-byte header", offset, left);
            return CWEBRTC_DTLS_ERROR_MALFORMED;
        }
        if (record[1] != 254) {
            snprintf(dtls->last_error, sizeof dtls->last_error,
                     "the DTLS record at byte %zu has version %u.%u, not 254.x", offset, record[1], record[2]);
            return CWEBRTC_DTLS_ERROR_MALFORMED;
        }
        size_t body = ((size_t)record[11] << 8) | record[12];
        if (body > left - 13) {
            snprintf(dtls->last_error, sizeof dtls->last_error,
                     "the DTLS record at byte %zu announces %zu bytes, the datagram holds %zu", offset, body,
                     left - 13);
            return CWEBRTC_DTLS_ERROR_MALFORMED;
        }
        offset += 13 + body;
    }
    return CWEBRTC_DTLS_OK;
}

int cwebrtc_dtls_receive(cwebrtc_dtls *dtls, const uint8_t *datagram, size_t length) {
    if (dtls->failed) return dtls->failed;
    int status = check_records(dtls, datagram, length);
    if (status != CWEBRTC_DTLS_OK) return status;  // dropped; the association carries on
    if (length > 0x7fffffff) return CWEBRTC_DTLS_ERROR_MALFORMED;
    ERR_clear_error();
    if (BIO_write(dtls->incoming, datagram, (int)length) != (int)length)
        return fail(dtls, CWEBRTC_DTLS_ERROR_INTERNAL, "could not queue a datagram of %zu bytes", length);
    status = advance(dtls);
    // Whatever OpenSSL did not consume (it discards bad records) must not merge with the next datagram.
    (void)BIO_reset(dtls->incoming);
    BIO_set_mem_eof_return(dtls->incoming, -1);
    return status;
}

int64_t cwebrtc_dtls_timeout_ms(cwebrtc_dtls *dtls) {
    struct timeval left;
    if (dtls->failed || !DTLSv1_get_timeout(dtls->ssl, &left)) return -1;
    return (int64_t)left.tv_sec * 1000 + (left.tv_usec + 999) / 1000;
}

int cwebrtc_dtls_handle_timeout(cwebrtc_dtls *dtls) {
    if (dtls->failed) return dtls->failed;
    ERR_clear_error();
    int result = DTLSv1_handle_timeout(dtls->ssl);
    if (result < 0) {
        if (dtls->received_alert[0])
            return fail(dtls, CWEBRTC_DTLS_ERROR_ALERT, "the peer sent %s", dtls->received_alert);
        return fail(dtls, CWEBRTC_DTLS_ERROR_TIMEOUT, "the peer did not answer the DTLS handshake in time");
    }
    return CWEBRTC_DTLS_OK;
}

int cwebrtc_dtls_is_connected(const cwebrtc_dtls *dtls) { return dtls->connected && !dtls->failed; }

int cwebrtc_dtls_peer_closed(const cwebrtc_dtls *dtls) { return dtls->peer_closed; }

int cwebrtc_dtls_srtp_profile(const cwebrtc_dtls *dtls) {
    SRTP_PROTECTION_PROFILE *profile = SSL_get_selected_srtp_profile(dtls->ssl);
    return profile ? (int)profile->id : 0;
}

int cwebrtc_dtls_export_srtp_keying_material(cwebrtc_dtls *dtls, uint8_t *output, size_t length) {
    if (!cwebrtc_dtls_is_connected(dtls)) {
        snprintf(dtls->last_error, sizeof dtls->last_error, "no SRTP keys before the DTLS handshake completes");
        return CWEBRTC_DTLS_ERROR_STATE;
    }
    static const char label[] = "EXTRACTOR-dtls_srtp";
    ERR_clear_error();
    if (SSL_export_keying_material(dtls->ssl, output, length, label, sizeof label - 1, NULL, 0, 0) != 1) {
        snprintf(dtls->last_error, sizeof dtls->last_error, "OpenSSL could not export %zu bytes of keying material",
                 length);
        append_openssl_errors(dtls->last_error, sizeof dtls->last_error);
        return CWEBRTC_DTLS_ERROR_INTERNAL;
    }
    return CWEBRTC_DTLS_OK;
}

int cwebrtc_dtls_close(cwebrtc_dtls *dtls) {
    if (dtls->close_sent || dtls->failed || !dtls->connected) return CWEBRTC_DTLS_OK;
    dtls->close_sent = 1;
    ERR_clear_error();
    (void)SSL_shutdown(dtls->ssl);
    ERR_clear_error();
    return CWEBRTC_DTLS_OK;
}

const char *cwebrtc_dtls_last_error(const cwebrtc_dtls *dtls) { return dtls->last_error; }
