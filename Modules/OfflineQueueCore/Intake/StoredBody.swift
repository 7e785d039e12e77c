public import Foundation
import HTTPCore

/// Where a stored body lives.
public enum StoredBody: Sendable, Hashable {
    /// Small bodies, in the row.
    case inline(Data)
    /// Large bodies, kept apart from the row (the reference only) and streamed at replay: a
    /// file in a SQLite queue's body folder, chunks on PostgreSQL.
    case file(name: String, length: Int)

    /// The body's length in bytes.
    public var length: Int {
        switch self {
        case .inline(let data): data.count
        case .file(_, let length): length
        }
    }
}
