import Foundation

/// `bench-server` as a child process, so the server's threads do not share the client's
/// event loops (both still share the machine's cores, as they would on one host).
struct ServerProcess {
    let process: Process
    let input: Pipe
    let port: Int

    static func start() throws -> ServerProcess {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("bench-server")
        let process = Process()
        process.executableURL = executable
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
            throw BenchError("bench-server did not report a port (is it built next to courier-bench?)")
        }
        return ServerProcess(process: process, input: input, port: port)
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
