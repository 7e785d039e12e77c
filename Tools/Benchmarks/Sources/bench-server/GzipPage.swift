import Foundation
import NIOCore

/// `GET /page.gz`: the same page, gzipped (`gzip -9n` of the body above, 773 → 198 bytes),
/// answered with `Content-Encoding: gzip` whatever the request's `Accept-Encoding`: the
/// compressed answer of the default-configuration pair.
let gzippedBody = ByteBuffer(bytes: Data(base64Encoded: "H4sIAAAAAAACA53MOw6DMBAE0Kugra1IGP/wDVKnjCgWYhEUDIiYCnH3LEnhxk1crTSz83ZYsHdgSwZhDjiCNQyG4Pwb7H2H4fGtJvT0A1fKi2nzrVuLEhgs69BRXl/qmubYnxvAcXkila0L5+nRe4SG0OkW5u4FNqybO9jP5kmbR7sk3GTiVRKvIs4J15m4SOIi4hXhKhOXSVxGXBAuM3GVxFXEJeEiE9dJXEdcEV5l4iaJm4hrwvm/eHN8AFBYm7QFAwAA")!)
