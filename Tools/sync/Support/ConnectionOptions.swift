import ArgumentParser
import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import NIOSSL

/// How `drain` and `run` reach the origins on an operator's host: the proxy (from the
/// environment as curl reads it, or `--proxy`), the CAs to trust, the client certificate, and
/// per-origin exceptions (`--trust-file`). Secrets (a proxy's password, a client key) come from
/// a file or a systemd credential, are held only in this process's memory, and are never written
/// to the queue, a log or an error.
struct ConnectionOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The HTTP proxy for every origin, http://[user:password@]host[:port] (an https origin is reached through it by CONNECT). Default: $https_proxy / $HTTPS_PROXY for https, $http_proxy / $HTTP_PROXY for http, $all_proxy / $ALL_PROXY for either; '' for none. Without credentials in the URL, the systemd credential courier-proxy (user:password) when it exists.",
        valueName: "url"
    ))
    var proxy: String?

    @Option(name: .customLong("no-proxy"), help: ArgumentHelp(
        "Hosts reached directly, as curl reads $NO_PROXY (the default): comma-separated names (each with its subdomains), addresses, CIDR ranges, each with an optional :port; * for all.",
        valueName: "list"
    ))
    var noProxy: String?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp(
        "Also trust the CA certificates in this PEM file (a company's private CA), besides the system's.", valueName: "pem"
    ))
    var caFile: String?

    @Flag(name: .customLong("no-system-trust"), help: "Trust only --ca-file's CAs, not the system's.")
    var noSystemTrust = false

    @Option(name: .customLong("client-cert"), help: ArgumentHelp(
        "Present this certificate (PEM, the chain after it) to servers that ask for one. Default: the systemd credential courier-client-cert when it exists.",
        valueName: "pem"
    ))
    var clientCert: String?

    @Option(name: .customLong("client-key"), help: ArgumentHelp(
        "The client certificate's private key (PEM, unencrypted; private: mode 0600, not a symbolic link). Default: the systemd credential courier-client-key when it exists.",
        valueName: "pem"
    ))
    var clientKey: String?

    @Option(name: .customLong("trust-file"), help: ArgumentHelp(
        "Per-origin TLS, one 'ORIGIN ca=PEM client-cert=PEM client-key=PEM system-trust=no' a line (any of the settings; # starts a comment): each starts from the options' settings and changes what it names.",
        valueName: "file"
    ))
    var trustFile: String?

    /// The systemd credentials read when their option is not given.
    static let proxyCredential = "courier-proxy"
    static let certificateCredential = "courier-client-cert"
    static let keyCredential = "courier-client-key"

    func validate() throws {
        if noSystemTrust && caFile == nil { throw ValidationError("--no-system-trust needs --ca-file: nothing would be trusted") }
        if let proxy, !proxy.isEmpty {
            do { _ = try ProxyServer(url: proxy) } catch { throw ValidationError("--proxy: \(error.reason)") }
        }
    }

    /// The transport's configuration: the defaults, `connectionsPerHost`, and these options.
    /// Says what is wrong and throws an exit status: 64 for a bad value, 66 for a missing file,
    /// 78 for a key open to other users or a symbolic link, 65 for a file that does not parse.
    func configuration(
        connectionsPerHost: Int,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> AsyncHTTPClientTransport.Configuration {
        var configuration = AsyncHTTPClientTransport.Configuration(maximumConnectionsPerHost: connectionsPerHost)
        configuration.proxy = try proxySettings(environment: environment)
        let credentials = KeyringSource.credentialsFolder(environment)
        var tls = configuration.tls
        try apply(ca: caFile, systemTrust: !noSystemTrust, to: &tls)
        let certificate = clientCert ?? credentials.flatMap { Self.existing($0, Self.certificateCredential) }
        let key = clientKey ?? credentials.flatMap { Self.existing($0, Self.keyCredential) }
        try apply(certificate: certificate, key: key, to: &tls)
        configuration.tls = tls
        if let trustFile { configuration.tlsByOrigin = try originTLS(from: trustFile, base: tls) }
        return configuration
    }

    /// `--proxy`, else the environment's; the credential's user and password when the URL has
    /// no password.
    func proxySettings(environment: [String: String]) throws -> ProxySettings? {
        var settings: ProxySettings?
        if let proxy {
            guard !proxy.isEmpty else { return nil }
            settings = ProxySettings(all: try ProxyServer(url: proxy), bypass: ProxyBypass(noProxy ?? Self.environmentBypass(environment)))
        } else {
            do {
                settings = try ProxySettings(environment: environment)
            } catch {
                complain("the proxy in the environment cannot be used: \(error.reason)")
                throw SysExit.usage
            }
            if let noProxy { settings?.bypass = ProxyBypass(noProxy) }
        }
        guard var found = settings else { return nil }
        if let folder = KeyringSource.credentialsFolder(environment), let path = Self.existing(folder, Self.proxyCredential),
           Self.needsPassword(found.http) || Self.needsPassword(found.https) {
            let credentials: ProxyCredentials
            do {
                credentials = try ProxyCredentials(line: try readPrivateFile(path, what: "proxy credential"))
            } catch let error as ProxyError {
                complain("\(path): \(error.reason)")
                throw SysExit.dataError
            }
            if Self.needsPassword(found.http) { found.http?.credentials = credentials }
            if Self.needsPassword(found.https) { found.https?.credentials = credentials }
        }
        return found
    }

    /// Whether `server`'s URL named no password (`http://host` or `http://user@host`): the
    /// credential then gives the user and password.
    private static func needsPassword(_ server: ProxyServer?) -> Bool {
        guard let server else { return false }
        return server.credentials?.password.isEmpty ?? true
    }

    private static func environmentBypass(_ environment: [String: String]) -> String {
        environment["no_proxy"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["NO_PROXY"] ?? ""
    }

    /// The credential's path when it exists in `folder`.
    private static func existing(_ folder: String, _ name: String) -> String? {
        let path = URL(fileURLWithPath: folder, isDirectory: true).appendingPathComponent(name).path
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    private func apply(ca: String?, systemTrust: Bool, to tls: inout TLSConfiguration) throws {
        guard let ca else { return }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(ca)
        } catch {
            complain(FileManager.default.fileExists(atPath: ca) ? "\(ca) holds no PEM certificate that can be read" : "no CA file at \(ca)")
            throw FileManager.default.fileExists(atPath: ca) ? SysExit.dataError : SysExit.noInput
        }
        guard !certificates.isEmpty else {
            complain("\(ca) holds no PEM certificate")
            throw SysExit.dataError
        }
        if systemTrust {
            tls.additionalTrustRoots.append(.certificates(certificates))
        } else {
            tls.trustRoots = .certificates(certificates)
            tls.additionalTrustRoots = []
        }
    }

    /// The client certificate and key: both or neither; the key read as the keyring is (private
    /// to this user, not a link), and parsed from memory, so what was checked is what is used.
    private func apply(certificate: String?, key: String?, to tls: inout TLSConfiguration) throws {
        switch (certificate, key) {
        case (nil, nil): return
        case (nil, _?):
            complain("a client key needs its certificate: give --client-cert (or the credential \(Self.certificateCredential))")
            throw SysExit.usage
        case (_?, nil):
            complain("a client certificate needs its key: give --client-key (or the credential \(Self.keyCredential))")
            throw SysExit.usage
        case (let certificate?, let key?):
            guard FileManager.default.fileExists(atPath: certificate) else {
                complain("no client certificate at \(certificate)")
                throw SysExit.noInput
            }
            let chain: [NIOSSLCertificate]
            do { chain = try NIOSSLCertificate.fromPEMFile(certificate) } catch {
                complain("\(certificate) holds no PEM certificate that can be read")
                throw SysExit.dataError
            }
            guard FileManager.default.fileExists(atPath: key) else {
                complain("no client key at \(key)")
                throw SysExit.noInput
            }
            let text = try readPrivateFile(key, what: "client key")
            let privateKey: NIOSSLPrivateKey
            do { privateKey = try NIOSSLPrivateKey(bytes: Array(text.utf8), format: .pem) } catch {
                complain("\(key) holds no PEM private key that can be read (unencrypted PKCS#8, RSA or EC)")
                throw SysExit.dataError
            }
            guard !chain.isEmpty else {
                complain("\(certificate) holds no PEM certificate")
                throw SysExit.dataError
            }
            tls.certificateChain = chain.map { .certificate($0) }
            tls.privateKey = .privateKey(privateKey)
        }
    }

    /// The `--trust-file` lines, each from `base`.
    private func originTLS(from path: String, base: TLSConfiguration) throws -> [Origin: TLSConfiguration] {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            complain("--trust-file: cannot read \(path): \(error.localizedDescription)")
            throw FileManager.default.fileExists(atPath: path) ? SysExit.ioError : SysExit.noInput
        }
        var result: [Origin: TLSConfiguration] = [:]
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
            guard !line.isEmpty else { continue }
            func bad(_ reason: String) -> ExitCode {
                complain("--trust-file: \(path), line \(number + 1): \(reason)")
                return SysExit.dataError
            }
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let origin = Origin(words[0]), origin.scheme == "https" else { throw bad("\(words[0]) is not an https origin") }
            guard result[origin] == nil else { throw bad("\(origin) is named twice") }
            var settings: [String: String] = [:]
            for word in words.dropFirst() {
                guard let equals = word.firstIndex(of: "=") else { throw bad("\(word) is not NAME=VALUE") }
                let name = String(word[..<equals]), value = String(word[word.index(after: equals)...])
                guard ["ca", "client-cert", "client-key", "system-trust"].contains(name) else {
                    throw bad("unknown setting \(name) (ca, client-cert, client-key, system-trust)")
                }
                settings[name] = value
            }
            var tls = base
            let systemTrust: Bool
            switch settings["system-trust"] {
            case nil, "yes": systemTrust = true
            case "no": systemTrust = false
            case let other?: throw bad("system-trust is yes or no, not \(other)")
            }
            if !systemTrust && settings["ca"] == nil { throw bad("system-trust=no needs ca=PEM: nothing would be trusted") }
            try apply(ca: settings["ca"], systemTrust: systemTrust, to: &tls)
            if settings["client-cert"] != nil || settings["client-key"] != nil {
                try apply(certificate: settings["client-cert"], key: settings["client-key"], to: &tls)
            }
            result[origin] = tls
        }
        return result
    }
}
