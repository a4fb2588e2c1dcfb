// OpenSSL's EVP digest interface, for SHA-256 with the CPU's SHA extensions.
#ifndef DL_CRYPTO_H
#define DL_CRYPTO_H
#include <openssl/evp.h>
#endif
