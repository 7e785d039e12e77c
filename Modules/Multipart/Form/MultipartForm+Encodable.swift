import Foundation
public import Encoding
public import HTTPCore

extension MultipartForm {
    /// Appends every field of `value` as a text part, with nested keys and arrays written in
    /// `encoder`'s styles (the Encoding module's: `user[name]`, `tags[]`, ...), `nil` omitted.
    ///
    /// ```swift
    /// struct Profile: Encodable { var name: String; var tags: [String]; var address: Address }
    /// try form.append(fields: profile)          // name, tags[], address[city], ...
    /// ```
    ///
    /// - Throws: `NetworkError.encoding(_:)` naming the key path of a value that cannot be written.
    public mutating func append(fields value: some Encodable, encoder: QueryEncoder = QueryEncoder()) throws(NetworkError) {
        for item in try encoder.queryItems(value) {
            append(item.value ?? "", name: item.name)
        }
    }
}
