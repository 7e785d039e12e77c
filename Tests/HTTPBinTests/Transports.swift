import AsyncHTTPClientTransport
import HTTPCore

/// Every transport the httpbin suite runs against. Add a transport here and every test in the
/// target runs against it too.
enum Transports {
    static let all: [NamedTransport] = [
        // One session for the whole target: FoundationNetworking on Linux can crash its
        // dispatch manager thread when sessions are torn down while others run
        // (swift-corelibs-foundation #4791, #5469), and a test run made one per test.
        NamedTransport("URLSession") { sharedSession },
        NamedTransport("AsyncHTTPClient") { AsyncHTTPClientTransport() },
    ]
}

/// The URLSession transport every test of the target shares.
private let sharedSession = URLSessionTransport()

/// A transport factory with a name for test output.
struct NamedTransport: Sendable, CustomStringConvertible {
    let name: String
    let make: @Sendable () -> any Transport

    init(_ name: String, make: @escaping @Sendable () -> any Transport) {
        self.name = name
        self.make = make
    }

    var description: String { name }
}
