import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import Logging
import TestSupport

/// One transport for the target: AsyncHTTPClient's event loops are costly to make.
let transport = AsyncHTTPClientTransport()

/// A loopback server with the seed libraries' example backends scripted on it.
func exampleServer() async throws -> TestHTTPServer {
    let server = try await TestHTTPServer.start()
    let json = [HeaderField(name: "Content-Type", value: "application/json")]
    server.script("/users/42", headers: json, body: Data(#"{"id":42,"name":"Ada Lovelace","email":"ada@example.com"}"#.utf8))
    server.script("/users/42/avatar", headers: [HeaderField(name: "Content-Type", value: "image/png")], body: avatarBytes)
    server.script("/agreements/accept", status: 204)
    server.script("/buildings/7", headers: json, body: Data(#"{"building_id":7,"title":"Tower of London","floors":5}"#.utf8))
    server.script("/dogs/random", headers: json, body: Data(#"{"name":"Rex","breed":"collie"}"#.utf8))
    server.script("/posts", status: 201, headers: json, body: Data(#"{"id":101,"title":"Hello","body":"First post","user_id":1}"#.utf8))
    server.script("/posts/1", status: 204)
    return server
}

let avatarBytes = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<1024).map { UInt8($0 % 256) })

/// The CRC-32 the server reports for `data`, to check a request body byte for byte.
func crc(_ data: Data) -> UInt32 { CRC32.checksum(data) }

/// JSON with sorted keys, as the examples' encoders write it, for body checks.
func sortedJSON(_ value: some Encodable) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return try encoder.encode(value)
}

/// A swift-log handler that keeps what was logged, for the logger examples.
struct CapturingLogHandler: LogHandler {
    let lines: LockedBox<[String]>
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = (event.metadata ?? [:]).merging(metadata) { new, _ in new }
        let text = ([event.message.description] + fields.keys.sorted().map { "\($0)=\(fields[$0]!)" }).joined(separator: " ")
        lines.withLock { $0.append(text) }
    }
}

/// A logger whose lines land in `lines`.
func capturingLogger(_ lines: LockedBox<[String]>) -> Logger {
    Logger(label: "parity") { _ in CapturingLogHandler(lines: lines) }
}
