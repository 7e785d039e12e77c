import Foundation
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Headless Chromium driven by Selenium through `console_driver.py` (beside this file): one
/// JSON command a line in, one JSON answer a line out. The scenarios live in the Swift tests;
/// the script only does what it is told.
///
/// Debian's `chromium` and `chromium-driver` and PyPI's `selenium` (in `.build/httpbin-venv`)
/// are installed by `Tools/test`. Without them a test is skipped ‒ unless `CI` is set, where
/// a missing browser is a failure.
final class BrowserSession: Sendable {
    /// One answer of the driver. Page answers carry the document's status and headers (from
    /// Chromium's performance log), its URL, title and visible text, and the text of an alert
    /// that was open, if any.
    struct Answer: Decodable, Sendable {
        var ok: Bool
        var error: String?
        var url: String?
        var title: String?
        var status: Int?
        var headers: [String: String]?
        var text: String?
        var alert: String?
        var values: [String?]?
        var count: Int?
        var rows: [[String]]?
        var value: Scalar?
        var path: String?
        var browser: String?
    }

    /// What `eval` returns: the scripts the tests run answer a string, a number, a boolean or null.
    enum Scalar: Decodable, Sendable, Equatable {
        case null, bool(Bool), number(Double), string(String)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() { self = .null }
            else if let bool = try? container.decode(Bool.self) { self = .bool(bool) }
            else if let number = try? container.decode(Double.self) { self = .number(number) }
            else { self = .string(try container.decode(String.self)) }
        }
    }

    private let process: ChildProcess
    private let input: FileHandle
    private let lines: LockedBox<[String]>
    private let errors: SyncMetricsTests.Collected
    /// The longest any one command may take, the driver's own waits included.
    static let commandLimit: Duration = .seconds(150)

    private init(process: ChildProcess, input: FileHandle, lines: LockedBox<[String]>, errors: SyncMetricsTests.Collected) {
        self.process = process
        self.input = input
        self.lines = lines
        self.errors = errors
    }

    // MARK: Availability

    /// The browser, its driver and a Python with selenium, or what is missing.
    struct Tools: Sendable {
        var python: String?
        var chromium: String
        var chromedriver: String
        var missing: [String]
    }

    static let tools = Task<Tools, Never> {
        let environment = ProcessInfo.processInfo.environment
        let chromium = environment["COURIER_CHROMIUM"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/bin/chromium"
        let chromedriver = environment["COURIER_CHROMEDRIVER"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/bin/chromedriver"
        var missing: [String] = []
        if !FileManager.default.isExecutableFile(atPath: chromium) { missing.append("\(chromium) (apt: chromium)") }
        if !FileManager.default.isExecutableFile(atPath: chromedriver) { missing.append("\(chromedriver) (apt: chromium-driver)") }
        var python: String?
        if let explicit = environment["COURIER_BROWSER_PYTHON"], !explicit.isEmpty,
           let result = try? await runTool(explicit, ["-c", "import selenium"]), result.status == 0 {
            python = explicit
        } else {
            python = try? await LoopbackPython.find(modules: ["selenium"]).path
        }
        if python == nil { missing.append("a Python with selenium (pip: Tools/browser-requirements.txt)") }
        return Tools(python: python, chromium: chromium, chromedriver: chromedriver, missing: missing)
    }

    /// Whether `CI` asks for every test to run: set, and not `0` or `false`.
    static var underCI: Bool {
        guard let value = ProcessInfo.processInfo.environment["CI"]?.lowercased(), !value.isEmpty else { return false }
        return value != "0" && value != "false"
    }

    /// The condition of the browser suites: run when the tools are there or under CI (where a
    /// missing tool then fails the test); otherwise skip, saying what is missing.
    static func shouldRun() async -> Bool {
        let tools = await tools.value
        if tools.missing.isEmpty || underCI { return true }
        if skipReported.withLock({ reported in defer { reported = true }; return !reported }) {
            FileHandle.standardError.write(Data("SyncConsoleBrowserTests skipped: missing \(tools.missing.joined(separator: ", ")); Tools/test installs them (under CI=true the tests run and fail instead)\n".utf8))
        }
        return false
    }

    /// Whether the reason for skipping was printed (once for the suite, not once a test).
    private static let skipReported = LockedBox(false)

    // MARK: Life

    /// Starts the driver and waits for the browser to be ready (at most two minutes: a loaded
    /// machine starts Chromium slowly).
    static func start() async throws -> BrowserSession {
        let tools = await tools.value
        guard tools.missing.isEmpty, let python = tools.python else {
            throw TestServerError("the browser tests need \(tools.missing.joined(separator: ", ")): run Tools/test, which installs them")
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("console_driver.py")
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-u", script.path]
        var environment = ProcessInfo.processInfo.environment
        environment["COURIER_CHROMIUM"] = tools.chromium
        environment["COURIER_CHROMEDRIVER"] = tools.chromedriver
        // Selenium Manager is never needed (the driver is named); make sure it never phones home.
        environment["SE_AVOID_STATS"] = "true"
        process.environment = environment
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let lines = LockedBox<[String]>([])
        let partial = LockedBox("")
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            partial.withLock { text in
                text += String(decoding: data, as: UTF8.self)
                while let newline = text.firstIndex(of: "\n") {
                    let line = String(text[..<newline])
                    text.removeSubrange(...newline)
                    lines.withLock { $0.append(line) }
                }
            }
        }
        let session = BrowserSession(process: process, input: input.fileHandleForWriting, lines: lines, errors: SyncMetricsTests.Collected(errors.fileHandleForReading))
        let ready = try await session.next(limit: .hangGuard)
        guard ready.ok else {
            await session.close()
            throw TestServerError("the browser did not start: \(ready.error ?? "?"); \(session.errors.text.current.suffix(2000))")
        }
        return session
    }

    /// Sends `quit`, closes its standard input (the driver quits Chromium when it ends) and waits
    /// for it; kills it after a minute.
    func close() async {
        if process.isRunning {
            _ = try? await send(["op": "quit"], limit: .hangGuard)
        }
        let input = self.input
        await onOwnThread { try? input.close() }
        if !(await process.exited(limit: .hangGuard)) {
            process.signal(SIGKILL)
            await process.exited()
        }
    }

    // MARK: Commands

    /// Sends one command and returns its answer, whether it succeeded or not.
    @discardableResult
    func send(_ command: [String: any Sendable], limit: Duration = commandLimit) async throws -> Answer {
        let data = try JSONSerialization.data(withJSONObject: command) + Data("\n".utf8)
        let input = self.input
        let written = await onOwnThread { (try? input.write(contentsOf: data)) != nil }
        guard written else { throw TestServerError("the browser driver is gone: \(errors.text.current.suffix(2000))") }
        return try await next(limit: limit)
    }

    /// Sends one command that must succeed, and returns its answer.
    @discardableResult
    func run(_ command: [String: any Sendable]) async throws -> Answer {
        let answer = try await send(command)
        guard answer.ok else {
            throw TestServerError("browser: \(command["op"] ?? "?") failed: \(answer.error ?? "?")")
        }
        return answer
    }

    private func next(limit: Duration) async throws -> Answer {
        var line: String?
        let answered = await eventually(limit) {
            line = lines.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            return line != nil || !process.isRunning
        }
        if line == nil { line = lines.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
        guard answered, let line else {
            throw TestServerError("the browser driver did not answer within \(limit)\(process.isRunning ? "" : " (it ended)"): \(errors.text.current.suffix(2000))")
        }
        return try JSONDecoder().decode(Answer.self, from: Data(line.utf8))
    }

    // MARK: Shorthands

    func open(_ url: String) async throws -> Answer { try await run(["op": "open", "url": url]) }
    /// Opens `url`, a page that moves on by itself, and answers the page it lands on under `until`.
    func open(_ url: String, until: String) async throws -> Answer { try await run(["op": "open", "url": url, "until": until]) }
    /// Clicks a checkbox; answers whether it is checked now.
    func check(_ css: String) async throws -> Bool { try await run(["op": "check", "css": css]).value == .bool(true) }
    func click(css: String) async throws -> Answer { try await run(["op": "click", "css": css]) }
    func click(button: String) async throws -> Answer { try await run(["op": "click", "button": button]) }
    func fill(_ css: String, _ value: String) async throws { try await run(["op": "fill", "css": css, "value": value]) }
    func select(_ css: String, _ value: String) async throws { try await run(["op": "select", "css": css, "value": value]) }
    func texts(_ css: String) async throws -> [String] { try await run(["op": "texts", "css": css]).values?.compactMap { $0 } ?? [] }
    func count(_ css: String) async throws -> Int { try await run(["op": "count", "css": css]).count ?? -1 }
    func attributes(_ css: String, _ name: String) async throws -> [String?] { try await run(["op": "attributes", "css": css, "name": name]).values ?? [] }
    func table(_ css: String) async throws -> [[String]] { try await run(["op": "table", "css": css]).rows ?? [] }
    func eval(_ script: String) async throws -> Scalar? { try await run(["op": "eval", "script": script]).value }
    func evalAsync(_ script: String) async throws -> Scalar? { try await run(["op": "eval_async", "script": script]).value }

    /// Adds a POST form for `action` to the current page and submits it, as a forged request would.
    func injectForm(action: String, fields: [(String, String)] = []) async throws -> Answer {
        try await run(["op": "inject_form", "action": action, "fields": fields.map { [$0.0, $0.1] }])
    }

    /// Sets the window's size, as a phone's; answers the width the page now has.
    @discardableResult
    func resize(width: Int, height: Int) async throws -> Scalar? {
        try await run(["op": "resize", "width": width, "height": height]).value
    }

    /// Saves a PNG of the window at `path` and prints where.
    func screenshot(_ path: URL) async throws {
        try await run(["op": "screenshot", "path": path.path])
        print("screenshot: \(path.path)")
    }
}
