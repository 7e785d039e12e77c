import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// TestSupport's `ChildProcess`, which starts every child of the test suites (`posix_spawn`, not
/// Foundation's `Process`).
@Suite("ChildProcess: posix_spawn children for the tests")
struct ChildProcessTests {
    /// Runs `/bin/sh -c script` with `configure` applied, reads both outputs to their end and
    /// waits (at most 20 s) for it to end.
    func shell(_ script: String, _ arguments: [String] = [], configure: (ChildProcess) -> Void = { _ in }) async throws -> (ChildProcess, stdout: String, stderr: String) {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script, "sh"] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        configure(process)
        try process.run()
        let stdout = readToEnd(out.fileHandleForReading)
        let stderr = readToEnd(err.fileHandleForReading)
        #expect(await process.exited(limit: .hangGuard), "sh -c \(script) ends")
        return (process, String(decoding: await stdout.value, as: UTF8.self), String(decoding: await stderr.value, as: UTF8.self))
    }

    @Test("an exit status, and both outputs read to their end")
    func exitStatus() async throws {
        let (process, stdout, stderr) = try await shell("echo out; echo err >&2; exit 3")
        #expect(!process.isRunning)
        #expect(process.terminationStatus == 3)
        #expect(process.terminationReason == .exit)
        #expect(stdout == "out\n")
        #expect(stderr == "err\n")
    }

    @Test("a death by signal reports the signal's number; terminate() sends SIGTERM, which the child does not block")
    func signalDeath() async throws {
        let (killed, _, _) = try await shell("kill -KILL $$")
        #expect(killed.terminationReason == .uncaughtSignal)
        #expect(killed.terminationStatus == SIGKILL)

        let sleeper = ChildProcess()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        try sleeper.run()
        #expect(sleeper.isRunning)
        #expect(sleeper.processIdentifier > 0)
        #expect(await sleeper.exited(limit: .milliseconds(100)) == false, "still sleeping")
        sleeper.terminate()
        #expect(await sleeper.exited(limit: .hangGuard))
        #expect(sleeper.terminationReason == .uncaughtSignal)
        #expect(sleeper.terminationStatus == SIGTERM)
        #expect(sleeper.signal(SIGKILL) == false, "no signal to a reaped pid")
    }

    @Test("the child inherits no descriptor of this process but its three streams")
    func noInheritedDescriptors() async throws {
        // An unrelated pipe, open in this process while the child starts.
        let unrelated = Pipe()
        var info = stat()
        #expect(fstat(unrelated.fileHandleForReading.fileDescriptor, &info) == 0)
        // The shell's own descriptors (the one it reads the folder with is gone by readlink's turn).
        let (lister, listing, _) = try await shell("for f in /proc/$$/fd/*; do readlink \"$f\" || true; done")
        #expect(lister.terminationStatus == 0)
        let targets = listing.split(separator: "\n")
        #expect(targets.count == 3, "only stdin, stdout and stderr: \(targets)")
        #expect(!listing.contains("pipe:[\(info.st_ino)]"), "\(listing)")

        // While a child sleeps, closing this process's write end ends the pipe for the reader.
        let sleeper = ChildProcess()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        // Far longer than the test: it is killed below, and a loaded machine may take seconds per step.
        sleeper.arguments = ["600"]
        sleeper.standardOutput = FileHandle.nullDevice
        try sleeper.run()
        defer { sleeper.signal(SIGKILL) }
        try unrelated.fileHandleForWriting.close()
        let read = readToEnd(unrelated.fileHandleForReading)
        let ended = await withTaskGroup(of: Bool.self) { group in
            group.addTask { _ = await read.value; return true }
            group.addTask { try? await Task.sleep(for: .hangGuard); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(ended, "the pipe reached its end while the child ran")
        #expect(sleeper.isRunning)
        sleeper.signal(SIGKILL)
        #expect(await sleeper.exited(limit: .hangGuard))
    }

    @Test("environment and working directory are passed; nil environment inherits this process's")
    func environmentAndDirectory() async throws {
        let folder = try makeTemporaryFolder("child-process")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (process, stdout, _) = try await shell("echo \"$GREETING\"; echo \"${HOME-unset}\"; pwd -P") { process in
            process.environment = ["GREETING": "hello there", "PATH": "/usr/bin:/bin"]
            process.currentDirectoryURL = folder
        }
        #expect(process.terminationStatus == 0)
        let resolved = String(cString: realpath(folder.path, nil)!)
        #expect(stdout == "hello there\nunset\n\(resolved)\n")

        let (inheriting, path, _) = try await shell("printf %s \"$PATH\"")
        #expect(inheriting.terminationStatus == 0)
        #expect(path == ProcessInfo.processInfo.environment["PATH"] ?? "")
    }

    @Test("standard input from a pipe (runTool), and a program that does not exist throws")
    func inputAndFailure() async throws {
        let result = try await runTool("/bin/cat", [], input: Data("fed through stdin".utf8))
        #expect(result.status == 0)
        #expect(String(decoding: result.stdout, as: UTF8.self) == "fed through stdin")

        let missing = ChildProcess()
        missing.executableURL = URL(fileURLWithPath: "/nonexistent/program")
        #expect(throws: ChildProcessError.self) { try missing.run() }
        #expect(!missing.isRunning)
    }

    @Test("50 children started at once from tasks: each one's output and status, all reaped")
    func manyAtOnce() async throws {
        let children = try await withThrowingTaskGroup(of: (Int, ChildProcess, String).self) { group in
            for index in 0..<50 {
                group.addTask {
                    let (process, stdout, _) = try await shell("echo \"child $1\"; exit $(($1 % 7))", [String(index)])
                    return (index, process, stdout)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(children.count == 50)
        for (index, process, stdout) in children {
            #expect(!process.isRunning)
            #expect(process.terminationReason == .exit)
            #expect(process.terminationStatus == Int32(index % 7))
            #expect(stdout == "child \(index)\n")
            // Reaped: this process has no such child left, not even a zombie (WNOWAIT: reaps nothing).
            var info = siginfo_t()
            #expect(waitid(P_PID, id_t(process.processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) == -1 && errno == ECHILD)
        }
    }
}
