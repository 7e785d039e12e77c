// Debian's libbrotli (libbrotli-dev): the decoder for `Content-Encoding: br` in
// AsyncHTTPClientTransport, with the package trait `Brotli`; the encoder for the tests' servers.
#include <brotli/decode.h>
#include <brotli/encode.h>
