public import Foundation

/// A gzip-encoded JSON document made once with `gzip -9` (Python's `gzip.compress`, mtime 0)
/// and kept here as Base64, so the test server needs no zlib: `/gzip` serves ``compressed`` with
/// `Content-Encoding: gzip`, and a transport that decodes it yields ``plain``.
public enum GzipFixture {
    /// The document before compression (4,136 bytes of JSON).
    public static let plain: Data = {
        let line = "Courier decodes gzip-encoded bodies: the quick brown fox jumps over the lazy dog."
        let lines = (0..<40).map { "{\"line\":\($0),\"text\":\"\(line)\"}" }
        return Data(("{\"gzipped\":true,\"lines\":[" + lines.joined(separator: ",") + "]}").utf8)
    }()

    /// The gzip member (deflate at level 9, 253 bytes).
    public static let compressed = Data(base64Encoded: base64)!

    private static let base64 = "H4sIAAAAAAACA73Xy07DMBBG4VcZeZ0iPFNu3vIYiAWth2Jo45BL6UV9dwgSj8DZJYqss/o/OeewOZWu8xzS2E/ehG1pfQjp6fz7FNJ1E0Y/jCGFxzr1xXvJvq7ZB5kPLrydX7Ksai4+JBnfXD6nsv6QVV+/WnmtB3mfdt0gdf9zdv68fTkdJdfNVbg0f5WIVBSpGFJZIpUbpHKLVO6Qyj1SeWBWCY2fWX9k5h+Z/UcGgMgIEBkCImNAZBCIjALKKKDQHYBRQBkFlFFAGQWUUUAZBZRRQBkFjFHAGAUM+hVgFDBGAWMUMEYBYxQwRgH7VwWeL9+V5nhGKBAAAA=="
}
