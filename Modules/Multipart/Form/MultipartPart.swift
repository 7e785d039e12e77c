public import Foundation
public import HTTPCore
public import HTTPTypes

/// One part of a multipart/form-data body: a field or a file.
public struct MultipartPart: Sendable {
    /// Where a part's bytes come from.
    public enum Source: Sendable {
        /// Bytes in memory.
        case data(Data)
        /// A file, streamed from disk; its size was taken when the part was made, and a file
        /// whose size changes before the upload ends fails the upload.
        case file(URL, size: Int)
        /// A stream made anew for each attempt, with its length when known.
        case stream(length: Int?, make: @Sendable () -> ByteStream)
    }

    /// The form field name.
    public var name: String
    /// The file name sent in `Content-Disposition`, if any.
    public var fileName: String?
    /// The part's `Content-Type`, if any.
    public var contentType: String?
    /// More header fields for this part.
    public var headers: HTTPFields
    /// The bytes.
    public var source: Source

    /// A part for the form field `name` with the bytes of `source`. `fileName` and `contentType`
    /// are sent only when given: nothing is inferred here, unlike `MultipartForm`'s `append`.
    public init(name: String, fileName: String? = nil, contentType: String? = nil, headers: HTTPFields = [:], source: Source) {
        self.name = name
        self.fileName = fileName
        self.contentType = contentType
        self.headers = headers
        self.source = source
    }

    /// The content's length when known.
    public var length: Int? {
        switch source {
        case .data(let data): data.count
        case .file(_, let size): size
        case .stream(let length, _): length
        }
    }
}
