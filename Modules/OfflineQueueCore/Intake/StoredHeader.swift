import Foundation
import HTTPCore

/// One header field as stored.
public struct StoredHeader: Sendable, Hashable, Codable {
    /// The field name as given.
    public var name: String
    /// The value; may hold `${env:NAME}` or `${credential:NAME}` templates resolved at send time.
    public var value: String

    /// The field `name` with `value`, as given: templates in it are not resolved.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
