public import Foundation
public import HTTPCore

/// Encodes parameters as a JSON object body with `JSONSerialization`, like Alamofire's
/// `JSONEncoding`.
///
/// Before serializing, every value is checked (`JSONSerialization` raises an exception that
/// ends the process on some platforms when it meets a value it cannot write): a `Date`, a
/// custom class, NaN or infinity becomes `NetworkError.encoding` with the key path of the
/// value, such as `user.scores.2`. `nil` inside `Any` is written as `null`.
///
/// ```swift
/// var body: RequestContent {
///     .parameters(["user": ["name": "Ada", "scores": [1, 2]]], encoding: JSONEncoding.default)
/// }
/// // {"user":{"name":"Ada","scores":[1,2]}}
/// ```
public struct JSONEncoding: ParameterEncoding {
    /// `JSONSerialization` options; `.sortedKeys` is always added, for deterministic bodies.
    public var options: JSONSerialization.WritingOptions
    /// The `Content-Type` to send.
    public var contentType: String

    /// An encoding with `options` and `contentType`.
    public init(options: JSONSerialization.WritingOptions = [], contentType: String = "application/json") {
        self.options = options
        self.contentType = contentType
    }

    /// Compact JSON with sorted keys.
    public static let `default` = JSONEncoding()
    /// Indented JSON with sorted keys.
    public static let prettyPrinted = JSONEncoding(options: .prettyPrinted)

    /// `parameters` as a JSON object body with ``contentType``.
    public func encode(_ parameters: [String: Any]) throws(NetworkError) -> RequestContent {
        .data(try data(for: parameters), contentType: contentType)
    }

    /// `object` (a dictionary or an array at the top) as JSON bytes.
    ///
    /// - Throws: `NetworkError.encoding` naming the key path of the first value that is not
    ///   JSON, or an empty key path when the top level is neither an array nor a dictionary.
    public func data(for object: Any) throws(NetworkError) -> Data {
        let checked = try ParameterTree.jsonObject(object, path: [])
        guard checked is [String: Any] || checked is [Any] else {
            throw .encoding(EncodingFailure(keyPath: [], message: "the top level of a JSON body must be an object or an array, not \(type(of: object))"))
        }
        guard JSONSerialization.isValidJSONObject(checked) else {
            throw .encoding(EncodingFailure(keyPath: [], message: "not a valid JSON object"))
        }
        do {
            return try JSONSerialization.data(withJSONObject: checked, options: options.union(.sortedKeys))
        } catch {
            throw .encoding(EncodingFailure(keyPath: [], message: "\(error)"))
        }
    }
}

extension RequestContent {
    /// Any JSON object (a dictionary or an array at the top) encoded now with `encoding`.
    ///
    /// ```swift
    /// var body: RequestContent { .jsonObject([["id": 1], ["id": 2]]) }
    /// ```
    public static func jsonObject(_ object: Any, encoding: JSONEncoding = .default) -> RequestContent {
        .evaluating { () throws(NetworkError) -> RequestContent in
            .data(try encoding.data(for: object), contentType: encoding.contentType)
        }
    }
}
