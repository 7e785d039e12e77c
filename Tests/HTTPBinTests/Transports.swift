import AsyncHTTPClientTransport
import HTTPCore

/// Every transport the httpbin suite runs against. Add a transport here and every test in the
/// target runs against it too.
enum Transports {
    static let all: [NamedTransport] = [
        NamedTransport("URLSession") { URLSessionTransport() },
        NamedTransport("AsyncHTTPClient") { AsyncHTTPClientTransport() },
    ]
}

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
