import Foundation

/// `bench-server` as a child process, so the server's threads do not share the client's
/// event loops (both still share the machine's cores, as they would on one host), and so its
/// allocations and system calls are not counted as the client's.
public struct ServerProcess: Sendable {
    public let process: Process
    let input: Pipe
    public let port: Int

    /// Starts the `bench-server` built next to this executable, with `arguments` (such as
    /// `["--port", "8080"]`).
    public static func start(arguments: [String] = []) throws -> ServerProcess {
        // The executable's own path: a runner may start it with a bare name as argv[0].
        let executable = (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("bench-server")
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)), port > 0 else {
            throw BenchError("bench-server did not report a port (is it built next to \(executable.deletingLastPathComponent().path)? swift build -c release --product bench-server)")
        }
        return ServerProcess(process: process, input: input, port: port)
    }

    public func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
