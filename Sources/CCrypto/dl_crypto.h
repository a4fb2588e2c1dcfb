// OpenSSL's EVP digest interface, for SHA-256 with the CPU's SHA extensions,
// and OpenSSL's process-wide set-up (OpenSSLProcess.swift).
#ifndef DL_CRYPTO_H
#define DL_CRYPTO_H
#include <openssl/crypto.h>
#include <openssl/evp.h>

/// Initialises OpenSSL without the exit-time cleanup it otherwise registers
/// with atexit; only the first initialisation in a process decides that.
/// 1 on success.
static inline int dl_crypto_init_without_exit_cleanup(void) {
    return OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}
#endif
