import Foundation

/// A child process: lines read from its standard output and its exit status awaited without
/// blocking the cooperative pool (each read runs on a thread of its own; the exit comes from
/// `terminationHandler`).
final class Child: @unchecked Sendable {
    // @unchecked: `process` and the pipes are set once in `init`; `status` is behind `lock`.
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var status: Int32?
    private var waiter: CheckedContinuation<Int32, Never>?

    /// This executable, to start again as a child in another mode.
    static var courierBench: URL {
        // The executable's own path: a runner may start it with a bare name as argv[0].
        (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
    }

    init(executable: URL, arguments: [String]) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.terminationHandler = { [self] process in
            let code = process.terminationStatus
            let waiter = lock.withLock { () -> CheckedContinuation<Int32, Never>? in
                status = code
                defer { self.waiter = nil }
                return self.waiter
            }
            waiter?.resume(returning: code)
        }
        try process.run()
    }

    /// The next line of the child's output, `nil` at its end.
    func line() async -> String? {
        await Self.readLine(from: output.fileHandleForReading)
    }

    func send(_ text: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    /// The exit status, once the child has exited.
    func exit() async -> Int32 {
        await withCheckedContinuation { continuation in
            let done = lock.withLock { () -> Int32? in
                if let status { return status }
                waiter = continuation
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    /// Ends a child still running (a failed measurement).
    func kill() {
        if process.isRunning { process.terminate() }
    }

    /// One line from `handle`, read byte by byte on a thread of its own.
    static func readLine(from handle: FileHandle) async -> String? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var line = Data()
                while true {
                    let byte = handle.readData(ofLength: 1)
                    if byte.isEmpty {
                        continuation.resume(returning: line.isEmpty ? nil : String(decoding: line, as: UTF8.self))
                        return
                    }
                    if byte == Data("\n".utf8) { break }
                    line.append(byte)
                }
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }
        }
    }
}
