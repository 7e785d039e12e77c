import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Two network namespaces joined by a veth pair, made for one test and destroyed after it:
///
///     namespace `inner` (the monitored host)      namespace `outer` (the "internet")
///     lo up, veth `innerLink` 10.77.0.1/24  <-->  veth `outerLink` 10.77.0.2/24
///                        fd77::1/64 (nodad)       fd77::2/64 (nodad)
///     default via 10.77.0.2
///
/// Names carry the test process's pid, so a later run can remove namespaces a crashed run left
/// behind (``removeStale()``) without touching those of a run still going.
public final class NetworkLab: Sendable {
    public static let prefix = "courier-rt-"
    public static let innerAddress = "10.77.0.1"
    public static let outerAddress = "10.77.0.2"
    public static let innerAddress6 = "fd77::1"
    public static let outerAddress6 = "fd77::2"

    public let inner: String
    public let outer: String
    public let innerLink: String
    public let outerLink: String

    /// The namespace file of `inner`, for ``NetlinkMonitor/init(namespacePath:)``.
    public var innerPath: String { "/var/run/netns/\(inner)" }
    public var outerPath: String { "/var/run/netns/\(outer)" }

    /// Creates the namespaces and the link, brings everything up and adds the default route.
    /// Throws a ``LabError`` that says what is missing when namespaces cannot be made.
    public init(defaultRoute: Bool = true) async throws {
        let id = String(UInt32.random(in: 0..<UInt32.max), radix: 16)
        inner = "\(Self.prefix)\(getpid())-\(id)-in"
        outer = "\(Self.prefix)\(getpid())-\(id)-out"
        let short = String(id.prefix(6))
        innerLink = "cr\(short)i"
        outerLink = "cr\(short)o"
        Self.removeStale()
        do {
            try await Self.ip("netns", "add", inner)
        } catch {
            throw LabError("cannot create a network namespace (these tests need root or CAP_SYS_ADMIN, iproute2 and a kernel with network namespaces): \(error)")
        }
        do {
            try await Self.ip("netns", "add", outer)
            try await Self.ip("-n", inner, "link", "add", innerLink, "type", "veth", "peer", "name", outerLink, "netns", outer)
            try await Self.ip("-n", inner, "link", "set", "lo", "up")
            try await Self.ip("-n", outer, "link", "set", "lo", "up")
            try await Self.ip("-n", inner, "addr", "add", "\(Self.innerAddress)/24", "dev", innerLink)
            try await Self.ip("-n", outer, "addr", "add", "\(Self.outerAddress)/24", "dev", outerLink)
            try await Self.ip("-n", inner, "-6", "addr", "add", "\(Self.innerAddress6)/64", "dev", innerLink, "nodad")
            try await Self.ip("-n", outer, "-6", "addr", "add", "\(Self.outerAddress6)/64", "dev", outerLink, "nodad")
            try await Self.ip("-n", inner, "link", "set", innerLink, "up")
            try await Self.ip("-n", outer, "link", "set", outerLink, "up")
            if defaultRoute { try await Self.ip("-n", inner, "route", "add", "default", "via", Self.outerAddress) }
        } catch {
            destroy()
            throw error
        }
    }

    /// Runs `ip` with `arguments` inside `inner`.
    public func inInner(_ arguments: String...) async throws { try await Self.ip(["-n", inner] + arguments) }

    /// Runs `ip` with `arguments` inside `outer`.
    public func inOuter(_ arguments: String...) async throws { try await Self.ip(["-n", outer] + arguments) }

    /// Deletes both namespaces (and with them the veth pair). Safe to call twice.
    ///
    /// Runs from `defer`, so it does not wait: the deletions are started and the kernel tears the
    /// namespaces down on its own (the names are this lab's alone).
    public func destroy() {
        Self.launch("netns", "delete", inner)
        Self.launch("netns", "delete", outer)
    }

    /// Deletes lab namespaces whose creating process is gone.
    public static func removeStale() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/var/run/netns") else { return }
        for name in names where name.hasPrefix(prefix) {
            let pidText = name.dropFirst(prefix.count).prefix { $0 != "-" }
            guard let pid = pid_t(pidText), pid != getpid(), kill(pid, 0) != 0 else { continue }
            launch("netns", "delete", name)
        }
    }

    public static func ip(_ arguments: String...) async throws { try await ip(arguments) }

    /// Starts `ip` with `arguments` and does not wait for it (its reaper thread reaps it).
    static func launch(_ arguments: String...) {
        guard let tool = try? ipTool() else { return }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
    }

    /// The path of iproute2's `ip`.
    public static func ipTool() throws -> String {
        guard let tool = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw LabError("iproute2's `ip` is not installed (apt-get install iproute2)")
        }
        return tool
    }

    /// Runs `ip` and blocks the calling thread until it ends: only for a thread of its own
    /// (``onOwnThread(_:)``) that must hold something across the call, never in async code.
    public static func ipOnThisThread(_ arguments: [String], input: String? = nil) throws {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: try ipTool())
        process.arguments = arguments
        let feed = Pipe(), errors = Pipe()
        if input != nil { process.standardInput = feed }
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        if let input {
            feed.fileHandleForWriting.write(Data(input.utf8))
            try feed.fileHandleForWriting.close()
        }
        process.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw LabError("ip \(arguments.joined(separator: " ")) failed (\(process.terminationStatus)): \(message)")
        }
    }

    /// Runs `ip` with `arguments` (and `input` on its standard input), awaited without
    /// blocking a thread of the cooperative pool.
    public static func ip(_ arguments: [String], input: String? = nil) async throws {
        let result = try await runTool(try ipTool(), arguments, input: input.map { Data($0.utf8) })
        guard result.status == 0 else {
            throw LabError("ip \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.errorText)")
        }
    }
}

/// Why a lab could not be set up.
public struct LabError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

