public import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCore

/// A real httpbin, run by gunicorn on a free loopback port, shared by every test in the process.
///
/// The first test to ask starts it; the others wait for the same launch. A small Python
/// supervisor binds the port itself (so no other process can take it between choosing and
/// listening), hands the socket to gunicorn, prints the port, and then blocks reading its
/// standard input: when this test process exits in any way, the pipe closes and the supervisor
/// stops gunicorn. It never outlives the tests.
///
/// Missing httpbin or gunicorn is a failure, never a skip: run `Tools/test`, which installs the
/// pinned versions into `.build/httpbin-venv`.
public struct HTTPBinServer: Sendable {
    /// `http://127.0.0.1:PORT`.
    public let baseURL: URL

    /// The shared server, started on first use.
    public static func shared() async throws -> HTTPBinServer {
        try await launch.value
    }

    private static let launch = Task<HTTPBinServer, any Error> {
        let python = try await LoopbackPython.find(modules: ["httpbin", "gunicorn"])
        let port = try await LoopbackPython.start(python: python, script: supervisor, name: "httpbin")
        let server = HTTPBinServer(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        try await server.waitUntilAnswering()
        return server
    }

    /// Polls `/get` until it answers 200, for at most ``Swift/Duration/hangGuard``.
    private func waitUntilAnswering() async throws {
        let deadline = ContinuousClock.now + .hangGuard
        var lastError = "no answer"
        while ContinuousClock.now < deadline {
            var request = URLRequest(url: baseURL.appendingPathComponent("get"))
            request.timeoutInterval = 2
            do {
                let (_, response) = try await URLSession.shared.data(for: request)
                if (response as? HTTPURLResponse)?.statusCode == 200 { return }
                lastError = "status \((response as? HTTPURLResponse)?.statusCode ?? -1)"
            } catch {
                lastError = "\(error)"
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw LoopbackPython.LaunchError("httpbin at \(baseURL) did not answer /get within \(Duration.hangGuard) (\(lastError)); log: \(LoopbackPython.logTail(name: "httpbin"))")
    }

    /// The supervisor: binds 127.0.0.1:0, starts gunicorn on that socket, prints the port,
    /// and stops gunicorn when its standard input closes.
    ///
    /// gunicorn keeps an idle connection 75 s, longer than the clients' pools keep theirs (60 s
    /// for AsyncHTTPClient): with its default of 2 s, a request that reused a pooled connection
    /// as gunicorn closed it failed with "I/O on closed channel" on a slow run (seen once in a
    /// fresh-clone CI run, OpenAPITransport's status test).
    private static let supervisor = """
    import os, socket, subprocess, sys
    log = open(sys.argv[1], "ab")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    fd = sock.fileno()
    os.set_inheritable(fd, True)
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--no-control-socket", "--bind", "fd://%d" % fd,
         "--worker-class", "gthread", "--workers", "1", "--threads", "32",
         "--timeout", "120", "--graceful-timeout", "1", "--keep-alive", "75", "httpbin:app"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(fd,))
    print(sock.getsockname()[1], flush=True)
    try:
        sys.stdin.buffer.read()
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    """
}

/// Starts Python helper servers for the tests and stops them when the test process exits.
public enum LoopbackPython {
    /// Why a helper server could not start.
    public struct LaunchError: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// The standard-input pipes of running supervisors; closing them stops the servers.
    private static let running = LockedBox<[ChildProcess]>([])

    /// The first Python that can import `modules`: `$HTTPBIN_PYTHON`, then the venv
    /// `Tools/test` makes, then `python3` on the `PATH`.
    public static func find(modules: [String]) async throws -> URL {
        // This file is Tests/TestSupport/HTTPBin/HTTPBinServer.swift: four levels below the root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        var candidates: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["HTTPBIN_PYTHON"], !explicit.isEmpty { candidates.append(explicit) }
        candidates.append(root.appendingPathComponent(".build/httpbin-venv/bin/python3").path)
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append("\(directory)/python3")
        }
        let check = "import " + modules.joined(separator: ", ")
        for path in candidates where FileManager.default.isExecutableFile(atPath: path) {
            if let result = try? await runTool(path, ["-c", check]), result.status == 0 { return URL(fileURLWithPath: path) }
        }
        throw LaunchError(
            "no Python with \(modules.joined(separator: " and ")) installed (tried \(candidates.first ?? "-") and python3 on PATH): " +
            "run Tools/test, which installs the pinned httpbin and gunicorn into .build/httpbin-venv"
        )
    }

    /// Where the server called `name` writes its log.
    public static func logURL(name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(name)-\(getpid()).log")
    }

    /// The last 2 KB of a server's log, for failure messages.
    public static func logTail(name: String) -> String {
        let data = (try? Data(contentsOf: logURL(name: name))) ?? Data()
        return String(decoding: data.suffix(2048), as: UTF8.self)
    }

    /// Runs `script` with the log path (and `arguments`) as its arguments, and returns the port
    /// it prints on its first line; waits at most ``Swift/Duration/hangGuard``.
    public static func start(python: URL, script: String, name: String, arguments: [String] = []) async throws -> Int {
        let process = ChildProcess()
        process.executableURL = python
        process.arguments = ["-c", script, logURL(name: name).path] + arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        running.withLock { $0.append(process) }
        registerExitHandler()
        // Keep the write end open for the life of the process: its closing is the stop signal.
        keepOpen(input)
        let reader = output.fileHandleForReading
        let line = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask { await readLine(reader) }
            group.addTask {
                try await Task.sleep(for: .hangGuard)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let line, let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw LaunchError("\(name) did not report its port within \(Duration.hangGuard) (got \(line.map { "'\($0)'" } ?? "nothing")); log: \(logTail(name: name))")
        }
        return port
    }

    private static let pipes = LockedBox<[Pipe]>([])

    private static func keepOpen(_ pipe: Pipe) {
        pipes.withLock { $0.append(pipe) }
    }

    private static func readLine(_ handle: FileHandle) async -> String {
        await onOwnThread {
            var text = ""
            while !text.contains("\n") {
                let data = handle.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
            }
            return text
        }
    }

    private static let exitHandler = LockedBox(false)

    private static func registerExitHandler() {
        let first = exitHandler.withLock { registered in
            defer { registered = true }
            return !registered
        }
        if first { atexit { LoopbackPython.stopAll() } }
    }

    /// Closes every supervisor's standard input and waits briefly for it to stop its server.
    public static func stopAll() {
        for pipe in pipes.withLock({ $0 }) { try? pipe.fileHandleForWriting.close() }
        for process in running.withLock({ $0 }) where process.isRunning {
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { process.terminate() }
        }
    }
}
