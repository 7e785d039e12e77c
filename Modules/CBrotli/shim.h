// Debian's libbrotli (libbrotli-dev): the decoder for `Content-Encoding: br` in
// AsyncHTTPClientTransport, with the package trait `Brotli` (the module links libbrotlidec
// only); the encoder for the tests' servers, whose target links libbrotlienc itself.
#include <brotli/decode.h>
#include <brotli/encode.h>
