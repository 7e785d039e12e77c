import Foundation
@testable import OfflineQueueCore
import Testing

/// The origin of a stored URL, as flow control and origin health key it: what precedes the
/// first `/`, `?` or `#` after the scheme's `://`.
@Suite("An entry's origin, read from its URL")
struct FlowOriginKeyTests {
    @Test("scheme, host and port; nothing after the path's start, a query or a fragment; nil without `://`")
    func origins() {
        let cases: [(String, String?)] = [
            ("https://api.example.com/v1/orders?x=1", "https://api.example.com"),
            ("https://api.example.com", "https://api.example.com"),
            ("http://127.0.0.1:8080?q=1", "http://127.0.0.1:8080"),
            ("http://[::1]:8443#top", "http://[::1]:8443"),
            ("https://user@host.test:1/p", "https://user@host.test:1"),
            ("https://xn--bcher-kva.example/ü", "https://xn--bcher-kva.example"),
            ("https://bücher.example/x", "https://bücher.example"),
            ("localhost:8080/x", nil),
            ("mailto:someone@example.com", nil),
            ("https:/one-slash", nil),
            ("", nil),
            ("https://", "https://"),
        ]
        for (url, origin) in cases {
            #expect(FlowOrigin.key(ofURL: url).map(String.init) == origin, "\(url)")
        }
    }
}
