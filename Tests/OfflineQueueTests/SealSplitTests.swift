import Foundation
import OfflineQueue
import QueueEncryption
import QueueTestSupport
import Testing

/// `KeyringSealer.split`: where a sealed entry's URL is cut into its clear origin and its
/// sealed target. The ASCII path scans bytes; it must cut where a search by characters cuts.
@Suite struct SealSplitTests {
    static let cases: [(url: String, origin: String)] = [
        ("https://api.example.com/orders?id=42", "https://api.example.com"),
        ("https://api.example.com:8443/a/b", "https://api.example.com:8443"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://h?q=1", "http://h"),
        ("http://h#frag", "http://h"),
        ("http://h/", "http://h"),
        ("http://user:pw@h:1/p", "http://user:pw@h:1"),
        ("h:1/p", "h:1/p"),
        ("no scheme at all", "no scheme at all"),
        ("", ""),
        ("a://", "a://"),
        ("https://bücher.example/straße?q=ü", "https://bücher.example"),
        ("https://example.com/caf\u{E9}/x\u{301}", "https://example.com"),
    ]

    @Test func originAndTarget() {
        for (url, origin) in Self.cases {
            let split = KeyringSealer.split(url)
            #expect(split.origin == origin, "\(url)")
            #expect(split.origin + split.target == url, "\(url)")
            #expect(split == Self.byCharacters(url), "\(url)")
        }
    }

    /// The cut made by characters, as the path for URLs that are not ASCII makes it.
    static func byCharacters(_ url: String) -> (origin: String, target: String) {
        guard let scheme = url.range(of: "://") else { return (url, "") }
        let rest = url[scheme.upperBound...]
        guard let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) else { return (url, "") }
        return (String(url[..<end]), String(url[end...]))
    }
}
