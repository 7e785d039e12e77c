public import Foundation
public import HTTPCore

extension RequestContent {
    /// A multipart/form-data body, streamed in chunks of about `chunkSize` bytes.
    ///
    /// Every file part is checked when the request is built, so a missing or unreadable file
    /// fails the call before any byte is sent. `progress` is called as each chunk is handed to
    /// the transport. `Content-Length` is sent when every part's length is known; otherwise
    /// the body is chunked.
    public static func multipart(
        _ form: MultipartForm,
        chunkSize: Int = 64 * 1024,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) -> RequestContent {
        RequestContent { draft, _ in
            try form.checkFiles()
            draft.body = .stream(length: form.contentLength) {
                ByteStream(MultipartByteSequence(form: form, chunkSize: chunkSize, progress: progress))
            }
            draft.setContentType(form.contentType)
        }
    }

    /// The form as `application/x-www-form-urlencoded` when it has only text fields (no file
    /// names, no streams, no extra part headers), else as multipart/form-data.
    public static func form(_ form: MultipartForm, progress: (@Sendable (UploadProgress) -> Void)? = nil) -> RequestContent {
        guard let encoded = form.urlEncoded() else { return .multipart(form, progress: progress) }
        return .data(encoded, contentType: "application/x-www-form-urlencoded")
    }
}

extension MultipartForm {
    /// Fails when a file part's file is gone or unreadable.
    func checkFiles() throws(NetworkError) {
        for part in parts {
            guard case .file(let url, _) = part.source else { continue }
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw .invalidRequest(.unreadableFile(url.path, reason: "missing or not readable"))
            }
        }
    }

    /// `name=value&…` with RFC 3986 percent-encoding, or `nil` when a part is not a plain field.
    public func urlEncoded() -> Data? {
        var pairs: [String] = []
        for part in parts {
            guard part.fileName == nil, part.headers.isEmpty, part.contentType == nil,
                  case .data(let data) = part.source, let value = String(data: data, encoding: .utf8) else { return nil }
            pairs.append(PercentEncoding.encode(part.name) + "=" + PercentEncoding.encode(value))
        }
        return Data(pairs.joined(separator: "&").utf8)
    }
}
