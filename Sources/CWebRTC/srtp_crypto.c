// libsrtp2's ciphers and authentication function on OpenSSL's libcrypto, without a heap
// allocation per packet.
//
// Debian builds libsrtp2 on NSS, whose AES and HMAC make a PK11 context on every call (some 14
// allocations per protected packet). libsrtp2 lets a program replace the implementation behind
// a cipher or auth type id (srtp_replace_cipher_type, srtp_replace_auth_type); the protocol
// (key derivation, rollover counter, replay window, SRTCP index) stays libsrtp2's. These types
// allocate when libsrtp2 makes a stream (alloc) and nowhere else: setting keys, IVs, AAD,
// encrypting, decrypting, tags and HMAC steps work in state made at alloc time.
//
// - AES-ICM (RFC 3711 4.1.1): one EVP_CIPHER_CTX in CTR mode, its cipher chosen at alloc, its key
//   at init; each packet gives it a new counter block, the packet's 16-byte IV XOR the salt.
// - AES-GCM (RFC 7714): one EVP_CIPHER_CTX; the 12-byte IV comes whole from libsrtp2; AAD then
//   payload go through EVP_CipherUpdate; the tag is appended on encrypt and checked on decrypt.
// - HMAC-SHA1 (RFC 2104): SHA-1 states after the inner and outer padded keys are kept from init;
//   each packet copies them (plain structs) instead of re-keying. OpenSSL's SHA1_* functions are
//   deprecated in 3.0 but still its assembly SHA-1; EVP_MAC and EVP_MD_CTX_copy may allocate.
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include "srtp_crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <srtp2/auth.h>
#include <srtp2/cipher.h>
#include <srtp2/srtp.h>
#include <stdlib.h>
#include <string.h>

// MARK: - Cipher implementations fetched once

/// OpenSSL's cipher implementations, fetched at registration so that alloc does not look them up.
static EVP_CIPHER *aes_128_ctr, *aes_256_ctr, *aes_128_gcm;

static const srtp_cipher_type_t icm_128_type, icm_256_type, gcm_128_type;
static const srtp_auth_type_t hmac_sha1_type;

/// A cipher object and its state in one block, freed together.
typedef struct {
    srtp_cipher_t cipher;
    EVP_CIPHER_CTX *context;
    int aes_key_bytes;
    /// ICM: the 14-byte salt, then two zero bytes (the block counter's place).
    unsigned char salt[16];
    /// GCM: tag bytes (8 or 16) and the direction set with the IV.
    int tag_bytes;
    int encrypting;
} cipher_block;

static srtp_err_status_t cipher_dealloc(srtp_cipher_t *cipher) {
    if (!cipher) return srtp_err_status_bad_param;
    cipher_block *block = (cipher_block *)cipher;
    EVP_CIPHER_CTX_free(block->context);
    OPENSSL_cleanse(block, sizeof *block);
    free(block);
    return srtp_err_status_ok;
}

/// A block with a context bound to `implementation` (no key yet).
static srtp_err_status_t cipher_block_new(srtp_cipher_t **result, const srtp_cipher_type_t *type,
                                          EVP_CIPHER *implementation, int key_len, int aes_key_bytes) {
    *result = NULL;
    if (!implementation) return srtp_err_status_init_fail;
    cipher_block *block = calloc(1, sizeof *block);
    if (!block) return srtp_err_status_alloc_fail;
    block->context = EVP_CIPHER_CTX_new();
    if (!block->context || !EVP_CipherInit_ex(block->context, implementation, NULL, NULL, NULL, 1)) {
        cipher_dealloc(&block->cipher);
        return srtp_err_status_init_fail;
    }
    block->cipher.type = type;
    block->cipher.state = block;
    block->cipher.key_len = key_len;
    block->cipher.algorithm = type->id;
    block->aes_key_bytes = aes_key_bytes;
    *result = &block->cipher;
    return srtp_err_status_ok;
}

// MARK: - AES-ICM

/// `key_len` counts the AES key and the 14-byte salt: 30 (AES-128) or 46 (AES-256).
static srtp_err_status_t icm_alloc(srtp_cipher_t **result, int key_len, int tag_len) {
    (void)tag_len;  // no tag in counter mode
    switch (key_len) {
    case SRTP_AES_ICM_128_KEY_LEN_WSALT:
        return cipher_block_new(result, &icm_128_type, aes_128_ctr, key_len, SRTP_AES_128_KEY_LEN);
    case SRTP_AES_ICM_256_KEY_LEN_WSALT:
        return cipher_block_new(result, &icm_256_type, aes_256_ctr, key_len, SRTP_AES_256_KEY_LEN);
    default:
        *result = NULL;
        return srtp_err_status_bad_param;
    }
}

/// `key`: the AES key followed by the 14-byte salt.
static srtp_err_status_t icm_init(void *state, const uint8_t *key) {
    cipher_block *block = state;
    memset(block->salt, 0, sizeof block->salt);
    memcpy(block->salt, key + block->aes_key_bytes, SRTP_SALT_LEN);
    if (!EVP_CipherInit_ex(block->context, NULL, NULL, key, NULL, 1)) return srtp_err_status_init_fail;
    return srtp_err_status_ok;
}

/// `iv`: 16 bytes from libsrtp2 (SSRC and packet index, or the KDF's label), the block counter's
/// two bytes zero. The counter block is the IV XOR the salt.
static srtp_err_status_t icm_set_iv(void *state, uint8_t *iv, srtp_cipher_direction_t direction) {
    (void)direction;  // counter mode: the same either way
    cipher_block *block = state;
    unsigned char counter[16];
    for (int i = 0; i < 16; i++) counter[i] = iv[i] ^ block->salt[i];
    if (!EVP_CipherInit_ex(block->context, NULL, NULL, NULL, counter, 1)) return srtp_err_status_init_fail;
    return srtp_err_status_ok;
}

/// XORs the keystream into `buffer` in place; continues the keystream across calls.
static srtp_err_status_t icm_crypt(void *state, uint8_t *buffer, unsigned int *length) {
    cipher_block *block = state;
    if (*length > (unsigned int)INT32_MAX) return srtp_err_status_bad_param;
    int written = 0;
    if (*length > 0 && !EVP_CipherUpdate(block->context, buffer, &written, buffer, (int)*length))
        return srtp_err_status_cipher_fail;
    *length = (unsigned int)written;
    return srtp_err_status_ok;
}

// MARK: - AES-GCM

/// `key_len` counts the AES key and the 12-byte salt (28); `tag_len` is 8 or 16.
static srtp_err_status_t gcm_alloc(srtp_cipher_t **result, int key_len, int tag_len) {
    *result = NULL;
    if (key_len != SRTP_AES_GCM_128_KEY_LEN_WSALT || (tag_len != 8 && tag_len != 16))
        return srtp_err_status_bad_param;
    srtp_err_status_t status =
        cipher_block_new(result, &gcm_128_type, aes_128_gcm, key_len, SRTP_AES_128_KEY_LEN);
    if (status != srtp_err_status_ok) return status;
    cipher_block *block = (*result)->state;
    block->tag_bytes = tag_len;
    if (!EVP_CIPHER_CTX_ctrl(block->context, EVP_CTRL_GCM_SET_IVLEN, 12, NULL)) {
        cipher_dealloc(*result);
        *result = NULL;
        return srtp_err_status_init_fail;
    }
    return srtp_err_status_ok;
}

/// `key`: the AES key (the salt after it is libsrtp2's, folded into the IVs it gives).
static srtp_err_status_t gcm_init(void *state, const uint8_t *key) {
    cipher_block *block = state;
    if (!EVP_CipherInit_ex(block->context, NULL, NULL, key, NULL, 1)) return srtp_err_status_init_fail;
    block->encrypting = -1;
    return srtp_err_status_ok;
}

/// `iv`: the 12-byte GCM IV libsrtp2 computed (RFC 7714 8.1); starts a message.
static srtp_err_status_t gcm_set_iv(void *state, uint8_t *iv, srtp_cipher_direction_t direction) {
    cipher_block *block = state;
    if (direction != srtp_direction_encrypt && direction != srtp_direction_decrypt) return srtp_err_status_bad_param;
    block->encrypting = direction == srtp_direction_encrypt;
    if (!EVP_CipherInit_ex(block->context, NULL, NULL, NULL, iv, block->encrypting))
        return srtp_err_status_init_fail;
    return srtp_err_status_ok;
}

/// Authenticated data: all of it before the payload; several calls add up (SRTCP gives two).
static srtp_err_status_t gcm_set_aad(void *state, const uint8_t *aad, uint32_t length) {
    cipher_block *block = state;
    int written = 0;
    if (block->encrypting < 0 || length > (uint32_t)INT32_MAX) return srtp_err_status_bad_param;
    if (length > 0 && !EVP_CipherUpdate(block->context, NULL, &written, aad, (int)length))
        return srtp_err_status_algo_fail;
    return srtp_err_status_ok;
}

/// Encrypts the payload in place; the tag comes from gcm_get_tag.
static srtp_err_status_t gcm_encrypt(void *state, uint8_t *buffer, unsigned int *length) {
    cipher_block *block = state;
    if (block->encrypting != 1 || *length > (unsigned int)INT32_MAX) return srtp_err_status_bad_param;
    int written = 0;
    if (*length > 0 && !EVP_CipherUpdate(block->context, buffer, &written, buffer, (int)*length))
        return srtp_err_status_cipher_fail;
    *length = (unsigned int)written;
    return srtp_err_status_ok;
}

/// Finishes an encryption: writes the tag (tag_bytes) at `tag` and its length into `*length`.
static srtp_err_status_t gcm_get_tag(void *state, uint8_t *tag, uint32_t *length) {
    cipher_block *block = state;
    unsigned char nothing[16];
    int written = 0;
    if (block->encrypting != 1) return srtp_err_status_bad_param;
    if (!EVP_CipherFinal_ex(block->context, nothing, &written) ||
        !EVP_CIPHER_CTX_ctrl(block->context, EVP_CTRL_GCM_GET_TAG, block->tag_bytes, tag))
        return srtp_err_status_algo_fail;
    *length = (uint32_t)block->tag_bytes;
    return srtp_err_status_ok;
}

/// `buffer`: ciphertext then tag, `*length` bytes in all. Decrypts in place and checks the tag;
/// `*length` out: the plaintext's bytes.
static srtp_err_status_t gcm_decrypt(void *state, uint8_t *buffer, unsigned int *length) {
    cipher_block *block = state;
    if (block->encrypting != 0 || *length < (unsigned int)block->tag_bytes || *length > (unsigned int)INT32_MAX)
        return srtp_err_status_bad_param;
    int payload = (int)*length - block->tag_bytes;
    int written = 0;
    if (!EVP_CIPHER_CTX_ctrl(block->context, EVP_CTRL_GCM_SET_TAG, block->tag_bytes, buffer + payload))
        return srtp_err_status_auth_fail;
    if (payload > 0 && !EVP_CipherUpdate(block->context, buffer, &written, buffer, payload))
        return srtp_err_status_cipher_fail;
    unsigned char nothing[16];
    int final_bytes = 0;
    if (EVP_CipherFinal_ex(block->context, nothing, &final_bytes) <= 0) return srtp_err_status_auth_fail;
    *length = (unsigned int)payload;
    return srtp_err_status_ok;
}

// MARK: - HMAC-SHA1

typedef struct {
    srtp_auth_t auth;
    /// SHA-1 after the key XOR ipad, and after the key XOR opad (RFC 2104).
    SHA_CTX inner, outer;
    /// The message being authenticated (start, update, compute).
    SHA_CTX running;
} hmac_block;

/// `out_len`: tag bytes, at most SHA-1's 20.
static srtp_err_status_t hmac_alloc(srtp_auth_t **result, int key_len, int out_len) {
    *result = NULL;
    if (out_len < 0 || out_len > SHA_DIGEST_LENGTH || key_len < 0) return srtp_err_status_bad_param;
    hmac_block *block = calloc(1, sizeof *block);
    if (!block) return srtp_err_status_alloc_fail;
    block->auth.type = &hmac_sha1_type;
    block->auth.state = block;
    block->auth.out_len = out_len;
    block->auth.key_len = key_len;
    block->auth.prefix_len = 0;  // no keystream prefix in the tag (that is RFC 3711's UMAC option)
    *result = &block->auth;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_dealloc(srtp_auth_t *auth) {
    if (!auth) return srtp_err_status_bad_param;
    hmac_block *block = auth->state;  // the block holds `auth` itself: read before wiping
    OPENSSL_cleanse(block, sizeof *block);
    free(block);
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_init(void *state, const uint8_t *key, int key_len) {
    hmac_block *block = state;
    enum { block_bytes = SHA_CBLOCK };
    unsigned char padded[block_bytes], pad[block_bytes];
    if (key_len < 0) return srtp_err_status_bad_param;
    memset(padded, 0, sizeof padded);
    if (key_len > block_bytes) {
        SHA_CTX digest;  // a key longer than a block is replaced by its hash
        SHA1_Init(&digest);
        SHA1_Update(&digest, key, (size_t)key_len);
        SHA1_Final(padded, &digest);
        OPENSSL_cleanse(&digest, sizeof digest);
    } else if (key_len > 0) {
        memcpy(padded, key, (size_t)key_len);
    }
    for (int i = 0; i < block_bytes; i++) pad[i] = padded[i] ^ 0x36;
    SHA1_Init(&block->inner);
    SHA1_Update(&block->inner, pad, block_bytes);
    for (int i = 0; i < block_bytes; i++) pad[i] = padded[i] ^ 0x5c;
    SHA1_Init(&block->outer);
    SHA1_Update(&block->outer, pad, block_bytes);
    block->running = block->inner;
    OPENSSL_cleanse(padded, sizeof padded);
    OPENSSL_cleanse(pad, sizeof pad);
    return srtp_err_status_ok;
}

/// Starts a message.
static srtp_err_status_t hmac_start(void *state) {
    hmac_block *block = state;
    block->running = block->inner;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_update(void *state, const uint8_t *message, int length) {
    hmac_block *block = state;
    if (length < 0) return srtp_err_status_bad_param;
    SHA1_Update(&block->running, message, (size_t)length);
    return srtp_err_status_ok;
}

/// Adds `message` and writes the first `tag_len` bytes of the HMAC at `tag`.
static srtp_err_status_t hmac_compute(void *state, const uint8_t *message, int length, int tag_len, uint8_t *tag) {
    hmac_block *block = state;
    if (length < 0 || tag_len < 0 || tag_len > SHA_DIGEST_LENGTH) return srtp_err_status_bad_param;
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1_Update(&block->running, message, (size_t)length);
    SHA1_Final(digest, &block->running);
    SHA_CTX outer = block->outer;
    SHA1_Update(&outer, digest, sizeof digest);
    SHA1_Final(digest, &outer);
    memcpy(tag, digest, (size_t)tag_len);
    OPENSSL_cleanse(digest, sizeof digest);
    return srtp_err_status_ok;
}

// MARK: - Known-answer vectors (libsrtp2 runs them when a type is registered)

// RFC 3711 B.2: AES-CM keystream, session key and salt, SSRC 0, index 0 (plaintext zeros).
static const uint8_t b2_key[SRTP_AES_ICM_128_KEY_LEN_WSALT] = {
    0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c,
    0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd,
};
static uint8_t zero_iv[16];
static const uint8_t zeros[48];
static const uint8_t b2_keystream[48] = {
    0xe0, 0x3e, 0xad, 0x09, 0x35, 0xc9, 0x5e, 0x80, 0xe1, 0x66, 0xb1, 0x6d, 0xd9, 0x2b, 0x4e, 0xb4,
    0xd2, 0x35, 0x13, 0x16, 0x2b, 0x02, 0xd0, 0xf7, 0x2a, 0x43, 0xa2, 0xfe, 0x4a, 0x5f, 0x97, 0xab,
    0x41, 0xe9, 0x5b, 0x3b, 0xb0, 0xa2, 0xe8, 0xdd, 0x47, 0x79, 0x01, 0xe4, 0xfc, 0xa8, 0x94, 0xc0,
};
static const srtp_cipher_test_case_t icm_128_vector = {
    .key_length_octets = sizeof b2_key, .key = b2_key, .idx = zero_iv,
    .plaintext_length_octets = sizeof zeros, .plaintext = zeros,
    .ciphertext_length_octets = sizeof b2_keystream, .ciphertext = b2_keystream,
};

// RFC 6188 7.1: AES-256 in counter mode, the same layout.
static const uint8_t rfc6188_key[SRTP_AES_ICM_256_KEY_LEN_WSALT] = {
    0x57, 0xf8, 0x2f, 0xe3, 0x61, 0x3f, 0xd1, 0x70, 0xa8, 0x5e, 0xc9, 0x3c, 0x40, 0xb1, 0xf0, 0x92,
    0x2e, 0xc4, 0xcb, 0x0d, 0xc0, 0x25, 0xb5, 0x82, 0x72, 0x14, 0x7c, 0xc4, 0x38, 0x94, 0x4a, 0x98,
    0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd,
};
static const uint8_t rfc6188_keystream[48] = {
    0x92, 0xbd, 0xd2, 0x8a, 0x93, 0xc3, 0xf5, 0x25, 0x11, 0xc6, 0x77, 0xd0, 0x8b, 0x55, 0x15, 0xa4,
    0x9d, 0xa7, 0x1b, 0x23, 0x78, 0xa8, 0x54, 0xf6, 0x70, 0x50, 0x75, 0x6d, 0xed, 0x16, 0x5b, 0xac,
    0x63, 0xc4, 0x86, 0x8b, 0x70, 0x96, 0xd8, 0x84, 0x21, 0xb5, 0x63, 0xb8, 0xc9, 0x4c, 0x9a, 0x31,
};
static const srtp_cipher_test_case_t icm_256_vector = {
    .key_length_octets = sizeof rfc6188_key, .key = rfc6188_key, .idx = zero_iv,
    .plaintext_length_octets = sizeof zeros, .plaintext = zeros,
    .ciphertext_length_octets = sizeof rfc6188_keystream, .ciphertext = rfc6188_keystream,
};

// The GCM specification's test case 4 (McGrew and Viega; NIST's AES-128 GCM vectors): 60 bytes
// of plaintext, 20 of AAD, the full 16-byte tag and the tag cut to 8. The 12 bytes after the key
// stand for libsrtp2's salt, which the cipher does not use.
static const uint8_t gcm_key[SRTP_AES_GCM_128_KEY_LEN_WSALT] = {
    0xfe, 0xff, 0xe9, 0x92, 0x86, 0x65, 0x73, 0x1c, 0x6d, 0x6a, 0x8f, 0x94, 0x67, 0x30, 0x83, 0x08,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};
static uint8_t gcm_iv[12] = {0xca, 0xfe, 0xba, 0xbe, 0xfa, 0xce, 0xdb, 0xad, 0xde, 0xca, 0xf8, 0x88};
static const uint8_t gcm_plaintext[60] = {
    0xd9, 0x31, 0x32, 0x25, 0xf8, 0x84, 0x06, 0xe5, 0xa5, 0x59, 0x09, 0xc5, 0xaf, 0xf5, 0x26, 0x9a,
    0x86, 0xa7, 0xa9, 0x53, 0x15, 0x34, 0xf7, 0xda, 0x2e, 0x4c, 0x30, 0x3d, 0x8a, 0x31, 0x8a, 0x72,
    0x1c, 0x3c, 0x0c, 0x95, 0x95, 0x68, 0x09, 0x53, 0x2f, 0xcf, 0x0e, 0x24, 0x49, 0xa6, 0xb5, 0x25,
    0xb1, 0x6a, 0xed, 0xf5, 0xaa, 0x0d, 0xe6, 0x57, 0xba, 0x63, 0x7b, 0x39,
};
static const uint8_t gcm_aad[20] = {
    0xfe, 0xed, 0xfa, 0xce, 0xde, 0xad, 0xbe, 0xef, 0xfe, 0xed,
    0xfa, 0xce, 0xde, 0xad, 0xbe, 0xef, 0xab, 0xad, 0xda, 0xd2,
};
static const uint8_t gcm_ciphertext_and_tag[76] = {
    0x42, 0x83, 0x1e, 0xc2, 0x21, 0x77, 0x74, 0x24, 0x4b, 0x72, 0x21, 0xb7, 0x84, 0xd0, 0xd4, 0x9c,
    0xe3, 0xaa, 0x21, 0x2f, 0x2c, 0x02, 0xa4, 0xe0, 0x35, 0xc1, 0x7e, 0x23, 0x29, 0xac, 0xa1, 0x2e,
    0x21, 0xd5, 0x14, 0xb2, 0x54, 0x66, 0x93, 0x1c, 0x7d, 0x8f, 0x6a, 0x5a, 0xac, 0x84, 0xaa, 0x05,
    0x1b, 0xa3, 0x0b, 0x39, 0x6a, 0x0a, 0xac, 0x97, 0x3d, 0x58, 0xe0, 0x91,
    // tag
    0x5b, 0xc9, 0x4f, 0xbc, 0x32, 0x21, 0xa5, 0xdb, 0x94, 0xfa, 0xe9, 0x5a, 0xe7, 0x12, 0x1a, 0x47,
};
static const srtp_cipher_test_case_t gcm_128_vector_short_tag = {
    .key_length_octets = sizeof gcm_key, .key = gcm_key, .idx = gcm_iv,
    .plaintext_length_octets = sizeof gcm_plaintext, .plaintext = gcm_plaintext,
    .ciphertext_length_octets = 68, .ciphertext = gcm_ciphertext_and_tag,
    .aad_length_octets = sizeof gcm_aad, .aad = gcm_aad, .tag_length_octets = 8,
};
static const srtp_cipher_test_case_t gcm_128_vector = {
    .key_length_octets = sizeof gcm_key, .key = gcm_key, .idx = gcm_iv,
    .plaintext_length_octets = sizeof gcm_plaintext, .plaintext = gcm_plaintext,
    .ciphertext_length_octets = sizeof gcm_ciphertext_and_tag, .ciphertext = gcm_ciphertext_and_tag,
    .aad_length_octets = sizeof gcm_aad, .aad = gcm_aad, .tag_length_octets = 16,
    .next_test_case = &gcm_128_vector_short_tag,
};

// RFC 2202 section 3, HMAC-SHA-1 test cases 1, 2 and 6 (a key longer than a block).
static const uint8_t rfc2202_key_1[20] = {
    0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b,
    0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b,
};
static const uint8_t rfc2202_tag_1[20] = {
    0xb6, 0x17, 0x31, 0x86, 0x55, 0x05, 0x72, 0x64, 0xe2, 0x8b,
    0xc0, 0xb6, 0xfb, 0x37, 0x8c, 0x8e, 0xf1, 0x46, 0xbe, 0x00,
};
static const uint8_t rfc2202_tag_2[20] = {
    0xef, 0xfc, 0xdf, 0x6a, 0xe5, 0xeb, 0x2f, 0xa2, 0xd2, 0x74,
    0x16, 0xd5, 0xf1, 0x84, 0xdf, 0x9c, 0x25, 0x9a, 0x7c, 0x79,
};
static uint8_t rfc2202_key_6[80];
static const uint8_t rfc2202_tag_6[20] = {
    0xaa, 0x4a, 0xe5, 0xe1, 0x52, 0x72, 0xd0, 0x0e, 0x95, 0x70,
    0x56, 0x37, 0xce, 0x8a, 0x3b, 0x55, 0xed, 0x40, 0x21, 0x12,
};
static const char rfc2202_data_6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
static const srtp_auth_test_case_t hmac_vector_6 = {
    .key_length_octets = sizeof rfc2202_key_6, .key = rfc2202_key_6,
    .data_length_octets = sizeof rfc2202_data_6 - 1, .data = (const uint8_t *)rfc2202_data_6,
    .tag_length_octets = sizeof rfc2202_tag_6, .tag = rfc2202_tag_6,
};
static const srtp_auth_test_case_t hmac_vector_2 = {
    .key_length_octets = 4, .key = (const uint8_t *)"Jefe",
    .data_length_octets = 28, .data = (const uint8_t *)"what do ya want for nothing?",
    .tag_length_octets = sizeof rfc2202_tag_2, .tag = rfc2202_tag_2, .next_test_case = &hmac_vector_6,
};
static const srtp_auth_test_case_t hmac_vector_1 = {
    .key_length_octets = sizeof rfc2202_key_1, .key = rfc2202_key_1,
    .data_length_octets = 8, .data = (const uint8_t *)"Hi There",
    .tag_length_octets = sizeof rfc2202_tag_1, .tag = rfc2202_tag_1, .next_test_case = &hmac_vector_2,
};

// MARK: - The types

static const srtp_cipher_type_t icm_128_type = {
    .alloc = icm_alloc, .dealloc = cipher_dealloc, .init = icm_init, .set_aad = NULL,
    .encrypt = icm_crypt, .decrypt = icm_crypt, .set_iv = icm_set_iv, .get_tag = NULL,
    .description = "AES-128 counter mode on OpenSSL libcrypto (MediaPipeline, no per-packet allocation)",
    .test_data = &icm_128_vector, .id = SRTP_AES_ICM_128,
};
static const srtp_cipher_type_t icm_256_type = {
    .alloc = icm_alloc, .dealloc = cipher_dealloc, .init = icm_init, .set_aad = NULL,
    .encrypt = icm_crypt, .decrypt = icm_crypt, .set_iv = icm_set_iv, .get_tag = NULL,
    .description = "AES-256 counter mode on OpenSSL libcrypto (MediaPipeline, no per-packet allocation)",
    .test_data = &icm_256_vector, .id = SRTP_AES_ICM_256,
};
static const srtp_cipher_type_t gcm_128_type = {
    .alloc = gcm_alloc, .dealloc = cipher_dealloc, .init = gcm_init, .set_aad = gcm_set_aad,
    .encrypt = gcm_encrypt, .decrypt = gcm_decrypt, .set_iv = gcm_set_iv, .get_tag = gcm_get_tag,
    .description = "AES-128 GCM on OpenSSL libcrypto (MediaPipeline, no per-packet allocation)",
    .test_data = &gcm_128_vector, .id = SRTP_AES_GCM_128,
};
static const srtp_auth_type_t hmac_sha1_type = {
    .alloc = hmac_alloc, .dealloc = hmac_dealloc, .init = hmac_init, .compute = hmac_compute,
    .update = hmac_update, .start = hmac_start,
    .description = "HMAC-SHA1 on OpenSSL libcrypto (MediaPipeline, no per-packet allocation)",
    .test_data = &hmac_vector_1, .id = SRTP_HMAC_SHA1,
};

int cwebrtc_srtp_crypto_register(void) {
    memset(rfc2202_key_6, 0xaa, sizeof rfc2202_key_6);
    aes_128_ctr = EVP_CIPHER_fetch(NULL, "AES-128-CTR", NULL);
    aes_256_ctr = EVP_CIPHER_fetch(NULL, "AES-256-CTR", NULL);
    aes_128_gcm = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    if (!aes_128_ctr || !aes_256_ctr || !aes_128_gcm) return srtp_err_status_init_fail;
    srtp_err_status_t status = srtp_replace_cipher_type(&icm_128_type, SRTP_AES_ICM_128);
    if (status == srtp_err_status_ok) status = srtp_replace_cipher_type(&icm_256_type, SRTP_AES_ICM_256);
    if (status == srtp_err_status_ok) status = srtp_replace_cipher_type(&gcm_128_type, SRTP_AES_GCM_128);
    if (status == srtp_err_status_ok) status = srtp_replace_auth_type(&hmac_sha1_type, SRTP_HMAC_SHA1);
    return (int)status;
}

// MARK: - Known answers on demand (the tests)

/// RFC 3711 B.3: the session keys derived from one master key, as libsrtp2's KDF derives them on
/// the AES-ICM type (label in byte 7 of a zero IV, keystream over zeros).
static srtp_err_status_t derivation_known_answer(void) {
    static const uint8_t master[SRTP_AES_ICM_128_KEY_LEN_WSALT] = {
        0xe1, 0xf9, 0x7a, 0x0d, 0x3e, 0x01, 0x8b, 0xe0, 0xd6, 0x4f, 0xa3, 0x2c, 0x06, 0xde, 0x41, 0x39,
        0x0e, 0xc6, 0x75, 0xad, 0x49, 0x8a, 0xfe, 0xeb, 0xb6, 0x96, 0x0b, 0x3a, 0xab, 0xe6,
    };
    static const struct {
        uint8_t label;
        unsigned int length;
        uint8_t bytes[20];
    } expected[] = {
        {0x00, 16, {0xc6, 0x1e, 0x7a, 0x93, 0x74, 0x4f, 0x39, 0xee, 0x10, 0x73, 0x4a, 0xfe, 0x3f, 0xf7, 0xa0, 0x87}},
        {0x02, 14, {0x30, 0xcb, 0xbc, 0x08, 0x86, 0x3d, 0x8c, 0x85, 0xd4, 0x9d, 0xb3, 0x4a, 0x9a, 0xe1}},
        {0x01, 20, {0xce, 0xbe, 0x32, 0x1f, 0x6f, 0xf7, 0x71, 0x6b, 0x6f, 0xd4,
                    0xab, 0x49, 0xaf, 0x25, 0x6a, 0x15, 0x6d, 0x38, 0xba, 0xa4}},
    };
    srtp_cipher_t *cipher = NULL;
    srtp_err_status_t status = icm_128_type.alloc(&cipher, sizeof master, 0);
    if (status != srtp_err_status_ok) return status;
    status = icm_128_type.init(cipher->state, master);
    for (size_t i = 0; status == srtp_err_status_ok && i < sizeof expected / sizeof expected[0]; i++) {
        uint8_t iv[16] = {0};
        iv[7] = expected[i].label;
        uint8_t key[20] = {0};
        unsigned int length = expected[i].length;
        status = icm_128_type.set_iv(cipher->state, iv, srtp_direction_encrypt);
        if (status == srtp_err_status_ok) status = icm_128_type.encrypt(cipher->state, key, &length);
        if (status == srtp_err_status_ok &&
            (length != expected[i].length || memcmp(key, expected[i].bytes, length) != 0))
            status = srtp_err_status_algo_fail;
    }
    icm_128_type.dealloc(cipher);
    return status;
}

int cwebrtc_srtp_crypto_known_answers(void) {
    if (!aes_128_ctr) return srtp_err_status_init_fail;  // not registered yet
    srtp_err_status_t status = srtp_cipher_type_self_test(&icm_128_type);
    if (status == srtp_err_status_ok) status = srtp_cipher_type_self_test(&icm_256_type);
    if (status == srtp_err_status_ok) status = srtp_cipher_type_self_test(&gcm_128_type);
    if (status == srtp_err_status_ok) status = srtp_auth_type_self_test(&hmac_sha1_type);
    if (status == srtp_err_status_ok) status = derivation_known_answer();
    return (int)status;
}
