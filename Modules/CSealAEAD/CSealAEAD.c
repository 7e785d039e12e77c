// The wrappers of CSealAEAD.h over swift-crypto's BoringSSL. Its symbols carry the
// `CCryptoBoringSSL_` prefix swift-crypto gives them; they are declared here, in this file
// alone, with BoringSSL's own signatures (include/CCryptoBoringSSL_aead.h in swift-crypto), so
// no Swift module sees them. A swift-crypto without them fails at link time, not at run time.
#include "CSealAEAD.h"

#if defined(__linux__)

typedef struct evp_aead_st EVP_AEAD;
typedef struct evp_aead_ctx_st EVP_AEAD_CTX;

const EVP_AEAD *CCryptoBoringSSL_EVP_aead_aes_256_gcm(void);
EVP_AEAD_CTX *CCryptoBoringSSL_EVP_AEAD_CTX_new(const EVP_AEAD *aead, const uint8_t *key,
                                               size_t key_len, size_t tag_len);
void CCryptoBoringSSL_EVP_AEAD_CTX_free(EVP_AEAD_CTX *ctx);
int CCryptoBoringSSL_EVP_AEAD_CTX_seal(const EVP_AEAD_CTX *ctx, uint8_t *out, size_t *out_len,
                                       size_t max_out_len, const uint8_t *nonce, size_t nonce_len,
                                       const uint8_t *in, size_t in_len, const uint8_t *ad,
                                       size_t ad_len);
int CCryptoBoringSSL_EVP_AEAD_CTX_open(const EVP_AEAD_CTX *ctx, uint8_t *out, size_t *out_len,
                                       size_t max_out_len, const uint8_t *nonce, size_t nonce_len,
                                       const uint8_t *in, size_t in_len, const uint8_t *ad,
                                       size_t ad_len);

enum { csa_key_size = 32, csa_nonce_size = 12, csa_tag_size = 16 };

csa_context *csa_aes256gcm_new(const uint8_t *key) {
    return (csa_context *)CCryptoBoringSSL_EVP_AEAD_CTX_new(CCryptoBoringSSL_EVP_aead_aes_256_gcm(), key,
                                                            csa_key_size, csa_tag_size);
}

void csa_free(csa_context *context) {
    CCryptoBoringSSL_EVP_AEAD_CTX_free((EVP_AEAD_CTX *)context);
}

int csa_seal(const csa_context *context, uint8_t *out, const uint8_t *nonce,
             const uint8_t *in, size_t in_len, const uint8_t *ad, size_t ad_len) {
    size_t written = 0;
    int sealed = CCryptoBoringSSL_EVP_AEAD_CTX_seal((const EVP_AEAD_CTX *)context, out, &written,
                                                    in_len + csa_tag_size, nonce, csa_nonce_size,
                                                    in, in_len, ad, ad_len);
    return sealed == 1 && written == in_len + csa_tag_size;
}

int csa_open(const csa_context *context, uint8_t *out, const uint8_t *nonce,
             const uint8_t *in, size_t in_len, const uint8_t *ad, size_t ad_len) {
    if (in_len < csa_tag_size) return 0;
    size_t written = 0;
    int opened = CCryptoBoringSSL_EVP_AEAD_CTX_open((const EVP_AEAD_CTX *)context, out, &written,
                                                    in_len - csa_tag_size, nonce, csa_nonce_size,
                                                    in, in_len, ad, ad_len);
    return opened == 1 && written == in_len - csa_tag_size;
}

#endif
