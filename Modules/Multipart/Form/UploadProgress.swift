/// How far an upload has come: the bytes handed to the transport, of the total when known.
public struct UploadProgress: Sendable, Hashable {
    /// Bytes produced so far.
    public var bytesSent: Int
    /// The body's whole length, or `nil` for a chunked body.
    public var totalBytes: Int?

    /// Progress of `bytesSent` bytes out of `totalBytes`, which is `nil` for a chunked body.
    public init(bytesSent: Int, totalBytes: Int?) {
        self.bytesSent = bytesSent
        self.totalBytes = totalBytes
    }

    /// `bytesSent / totalBytes`, or `nil` when the total is unknown.
    public var fraction: Double? {
        guard let totalBytes, totalBytes > 0 else { return totalBytes == 0 ? 1 : nil }
        return Double(bytesSent) / Double(totalBytes)
    }
}
