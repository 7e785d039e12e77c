public import Foundation

/// Runs a system tool (`mount`, `umount`, …) to its end and throws with its message when it
/// fails. For short commands only: it blocks the calling thread.
public func runSystemTool(_ tool: String, _ arguments: String...) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    let errors = Pipe()
    process.standardError = errors
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        throw TestServerError("\(tool) \(arguments.joined(separator: " ")) failed (these tests need root): \(message)")
    }
}

/// The executable `name` built beside the running test bundle (`swift build --build-tests`
/// builds every executable of the package into the same folder).
public func builtProduct(named name: String) throws -> URL {
    var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = folder.appendingPathComponent(name)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
           FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        folder.deleteLastPathComponent()
    }
    let fallback = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug/\(name)")
    guard FileManager.default.isExecutableFile(atPath: fallback.path) else {
        throw TestServerError("\(name) is not built; run `swift build --build-tests` first")
    }
    return fallback
}

extension Process {
    /// Waits for the process to end without blocking a thread of the cooperative pool (the
    /// loopback server's handlers need those threads while a child talks to it).
    public func exited() async {
        while isRunning { try? await Task.sleep(for: .milliseconds(5)) }
    }
}
