// CSealAEAD: AES-256-GCM on caller-owned buffers, for QueueEncryption's chunks. The work is
// done by the BoringSSL that swift-crypto builds and links on Linux (its CCryptoBoringSSL
// target); these wrappers call its EVP_AEAD functions directly instead of through AES.GCM's
// generic DataProtocol API, whose wrapping cost more than the cipher for a queue entry's small
// fields (Docs/Benchmarks.md). On platforms other than Linux this header declares nothing, and
// QueueEncryption uses AES.GCM.
#ifndef CSEALAEAD_H
#define CSEALAEAD_H

#if defined(__linux__)

#include <stddef.h>
#include <stdint.h>

/// A keyed AES-256-GCM context (BoringSSL's EVP_AEAD_CTX), 16-byte tags.
typedef struct csa_context csa_context;

/// A context for the 32-byte `key`, or NULL when out of memory.
csa_context *csa_aes256gcm_new(const uint8_t *key);

/// Frees `context`; BoringSSL clears its key schedule as it frees it.
void csa_free(csa_context *context);

/// Seals `in_len` bytes of `in` under the 12-byte `nonce`, authenticating `ad`, into `out`:
/// `in_len` + 16 bytes (the ciphertext, then the tag). Returns 1, or 0 on failure.
int csa_seal(const csa_context *context, uint8_t *out, const uint8_t *nonce,
             const uint8_t *in, size_t in_len, const uint8_t *ad, size_t ad_len);

/// Opens `in_len` (at least 16) bytes of `in`, ciphertext then tag, sealed under the 12-byte
/// `nonce` with `ad`, into `out` (`in_len` - 16 bytes). Returns 1 when it authenticates; 0
/// otherwise, with `out` cleared.
int csa_open(const csa_context *context, uint8_t *out, const uint8_t *nonce,
             const uint8_t *in, size_t in_len, const uint8_t *ad, size_t ad_len);

#endif

#endif
