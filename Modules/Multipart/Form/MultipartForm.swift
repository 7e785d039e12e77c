public import Foundation
public import HTTPCore
public import HTTPTypes

/// A multipart/form-data body (RFC 7578) built from fields, data, files and streams, and
/// streamed in constant memory whatever its size.
///
/// ```swift
/// var form = MultipartForm()
/// form.append("Ada", name: "author")
/// try form.append(file: URL(fileURLWithPath: "/tmp/report.pdf"), name: "report")
/// form.append(data: thumbnail, name: "thumb", fileName: "thumb.png")
/// let response = try await client.data(Request<Data>.post("/upload", body: .multipart(form) { progress in
///     print(progress.bytesSent, "of", progress.totalBytes ?? -1)
/// }))
/// ```
public struct MultipartForm: Sendable {
    /// How file names are written in `Content-Disposition`.
    public enum FileNameEncoding: Sendable {
        /// Non-ASCII bytes percent-encoded, as RFC 7578 §4.2 suggests (the default).
        case percentEncoded
        /// UTF-8 as it is, as browsers send it; for servers that expect that.
        case utf8
    }

    /// The boundary between parts.
    public private(set) var boundary: String
    /// The parts, in order.
    public private(set) var parts: [MultipartPart] = []
    /// How file names are written.
    public var fileNameEncoding: FileNameEncoding

    /// An empty form with a random boundary.
    public init(boundary: String = MultipartForm.randomBoundary(), fileNameEncoding: FileNameEncoding = .percentEncoded) {
        self.boundary = boundary
        self.fileNameEncoding = fileNameEncoding
    }

    /// A boundary of 32 random letters and digits after a fixed prefix.
    public static func randomBoundary() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return "courier-" + String((0..<32).map { _ in alphabet.randomElement()! })
    }

    /// `multipart/form-data; boundary=…`.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Appends a text field.
    public mutating func append(_ value: String, name: String, headers: HTTPFields = [:]) {
        add(MultipartPart(name: name, headers: headers, source: .data(Data(value.utf8))))
    }

    /// Appends bytes, as a file part when `fileName` is given. The content type is inferred
    /// from the file name's extension unless given.
    public mutating func append(data: Data, name: String, fileName: String? = nil, contentType: String? = nil, headers: HTTPFields = [:]) {
        let type = contentType ?? fileName.map(MediaTypes.contentType(forFileName:))
        add(MultipartPart(name: name, fileName: fileName, contentType: type, headers: headers, source: .data(data)))
    }

    /// Appends a file, streamed from disk when the body is sent.
    ///
    /// - Throws: `NetworkError.invalidRequest(_:)` now when the file is missing, not a
    ///   regular file or unreadable.
    public mutating func append(file: URL, name: String, fileName: String? = nil, contentType: String? = nil, headers: HTTPFields = [:]) throws(NetworkError) {
        let body = try RequestBody.file(file)
        let shownName = fileName ?? file.lastPathComponent
        let type = contentType ?? MediaTypes.contentType(forFileName: shownName)
        add(MultipartPart(name: name, fileName: shownName, contentType: type, headers: headers, source: .file(file, size: body.length ?? 0)))
    }

    /// Appends a part whose bytes come from a stream made anew for each attempt; with an
    /// unknown `length` the whole body is sent chunked.
    public mutating func append(
        stream: @escaping @Sendable () -> ByteStream,
        length: Int?,
        name: String,
        fileName: String? = nil,
        contentType: String? = nil,
        headers: HTTPFields = [:]
    ) {
        let type = contentType ?? fileName.map(MediaTypes.contentType(forFileName:)) ?? MediaTypes.fallback
        add(MultipartPart(name: name, fileName: fileName, contentType: type, headers: headers, source: .stream(length: length, make: stream)))
    }

    /// Appends a part as it is.
    public mutating func append(_ part: MultipartPart) {
        add(part)
    }

    /// The body's length, when every part's length is known.
    public var contentLength: Int? {
        var total = closingDelimiter.count
        for part in parts {
            guard let length = part.length else { return nil }
            total += header(for: part).count + length + 2
        }
        return total
    }

    private mutating func add(_ part: MultipartPart) {
        parts.append(part)
        // The boundary must not occur in any content; in-memory parts can be checked, and
        // 32 random characters make a collision with streamed content vanishingly unlikely.
        if case .data(let data) = part.source {
            while data.range(of: Data(boundary.utf8)) != nil { boundary = Self.randomBoundary() }
        }
    }

    /// The delimiter line and header fields that precede `part`'s content.
    func header(for part: MultipartPart) -> Data {
        var text = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.escape(part.name, encoding: .utf8))\""
        if let fileName = part.fileName {
            text += "; filename=\"\(Self.escape(fileName, encoding: fileNameEncoding))\""
        }
        text += "\r\n"
        if let contentType = part.contentType { text += "Content-Type: \(contentType)\r\n" }
        for field in part.headers where field.name != .contentType && field.name.canonicalName != "content-disposition" {
            text += "\(field.name.rawName): \(field.value)\r\n"
        }
        return Data((text + "\r\n").utf8)
    }

    /// `--boundary--` and the final line break.
    var closingDelimiter: Data { Data("--\(boundary)--\r\n".utf8) }

    /// A quoted-string's content per RFC 7578 §4.2 and the HTML form encoding algorithm:
    /// `"` → `%22`, CR → `%0D`, LF → `%0A`; with `.percentEncoded`, bytes above 0x7F too.
    static func escape(_ value: String, encoding: FileNameEncoding) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for byte in value.utf8 {
            let mustEncode = byte == UInt8(ascii: "\"") || byte == 0x0D || byte == 0x0A
                || (byte >= 0x80 && encoding == .percentEncoded)
            if mustEncode {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
