#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

// Macros Swift cannot call, as functions.
static inline long copenssl_set_mode(SSL_CTX *context, long mode) { return SSL_CTX_set_mode(context, mode); }
static inline int copenssl_set_min_version(SSL_CTX *context, int version) {
  return (int)SSL_CTX_set_min_proto_version(context, version);
}
static inline int copenssl_set_max_version(SSL_CTX *context, int version) {
  return (int)SSL_CTX_set_max_proto_version(context, version);
}
static inline long copenssl_set_options(SSL_CTX *context, long options) {
  return (long)SSL_CTX_set_options(context, (uint64_t)options);
}
