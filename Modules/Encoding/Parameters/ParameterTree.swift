import Foundation
import HTTPCore

/// Walks `[String: Any]` parameters, checking every value before anything is encoded, so a
/// value Courier cannot write becomes an error naming its key path instead of a crash.
enum ParameterTree {
    /// Lets a walk see through an `Optional` hidden inside `Any`.
    fileprivate protocol OptionalValue { var wrapped: Any? { get } }

    /// The query tree of `parameters`; keys sorted.
    ///
    /// - Parameter describingUnknown: write values of other types with their `description`
    ///   instead of failing (for `[String: any CustomStringConvertible & Sendable]`).
    static func queryNode(_ parameters: [String: Any], format: QueryFormat, describingUnknown: Bool = false) throws(NetworkError) -> [(key: String, value: QueryNode)] {
        var entries: [(key: String, value: QueryNode)] = []
        for key in parameters.keys.sorted() {
            entries.append((key, try queryNode(parameters[key]!, path: [key], format: format, describingUnknown: describingUnknown)))
        }
        return entries
    }

    private static func queryNode(_ value: Any, path: [String], format: QueryFormat, describingUnknown: Bool) throws(NetworkError) -> QueryNode {
        if let optional = value as? any OptionalValue {
            guard let wrapped = optional.wrapped else { return .null }
            return try queryNode(wrapped, path: path, format: format, describingUnknown: describingUnknown)
        }
        if value is NSNull { return .null }
        if let number = value as? NSNumber, type(of: value) is NSNumber.Type {
            return try numberNode(number, path: path)
        }
        switch QueryNode.scalar(for: value, format: format) {
        case .node(let node): return node
        case .invalid(let message): throw .encoding(EncodingFailure(keyPath: path, message: message))
        case .composite: break
        }
        if let dictionary = value as? [String: Any] {
            var entries: [(key: String, value: QueryNode)] = []
            for key in dictionary.keys.sorted() {
                entries.append((key, try queryNode(dictionary[key]!, path: path + [key], format: format, describingUnknown: describingUnknown)))
            }
            return .map(entries)
        }
        if let array = value as? [Any] {
            var items: [QueryNode] = []
            for (index, item) in array.enumerated() {
                items.append(try queryNode(item, path: path + [String(index)], format: format, describingUnknown: describingUnknown))
            }
            return .list(items)
        }
        if describingUnknown, let describable = value as? any CustomStringConvertible {
            return .scalar(describable.description)
        }
        throw .encoding(EncodingFailure(keyPath: path, message: "cannot encode a value of type \(type(of: value)) in a query"))
    }

    private static func numberNode(_ number: NSNumber, path: [String]) throws(NetworkError) -> QueryNode {
        if isBoolean(number) { return .bool(number.boolValue) }
        if isFloatingPoint(number), !number.doubleValue.isFinite {
            throw .encoding(EncodingFailure(keyPath: path, message: "\(number.doubleValue) is not a finite number"))
        }
        return .scalar(number.stringValue)
    }

    /// The tree of `value` with every value in a form `JSONSerialization` accepts on every
    /// platform: `String`, `Int`, `Double`, `Bool`, `NSNull`, `NSNumber`, arrays, dictionaries.
    static func jsonObject(_ value: Any, path: [String]) throws(NetworkError) -> Any {
        if let optional = value as? any OptionalValue {
            guard let wrapped = optional.wrapped else { return NSNull() }
            return try jsonObject(wrapped, path: path)
        }
        if value is NSNull { return NSNull() }
        if let number = value as? NSNumber, type(of: value) is NSNumber.Type {
            if isFloatingPoint(number), !number.doubleValue.isFinite {
                throw .encoding(EncodingFailure(keyPath: path, message: "\(number.doubleValue) is not a finite number; JSON has no NaN or infinity"))
            }
            return number
        }
        switch value {
        case let bool as Bool where type(of: value) == Bool.self: return bool
        case let string as String: return string
        case let integer as any BinaryInteger: return try integerObject(integer, path: path)
        case let number as any BinaryFloatingPoint:
            guard number.isFinite else {
                throw .encoding(EncodingFailure(keyPath: path, message: "\(number) is not a finite number; JSON has no NaN or infinity"))
            }
            // Through text, so a Float 0.1 stays 0.1 instead of 0.100000001490116.
            return Double(String(describing: number)) ?? Double(number)
        case let decimal as Decimal:
            guard !decimal.isNaN else { throw .encoding(EncodingFailure(keyPath: path, message: "NaN is not a number")) }
            return NSDecimalNumber(decimal: decimal)
        default:
            break
        }
        if let dictionary = value as? [String: Any] {
            var object: [String: Any] = [:]
            for (key, item) in dictionary { object[key] = try jsonObject(item, path: path + [key]) }
            return object
        }
        if let array = value as? [Any] {
            var items: [Any] = []
            items.reserveCapacity(array.count)
            for (index, item) in array.enumerated() { items.append(try jsonObject(item, path: path + [String(index)])) }
            return items
        }
        throw .encoding(EncodingFailure(keyPath: path, message: "a value of type \(type(of: value)) is not a JSON value"))
    }

    private static func integerObject(_ integer: any BinaryInteger, path: [String]) throws(NetworkError) -> Any {
        if let int = Int(exactly: integer) { return int }
        if let unsigned = UInt64(exactly: integer) { return NSNumber(value: unsigned) }
        throw .encoding(EncodingFailure(keyPath: path, message: "\(integer) does not fit in 64 bits"))
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        let type = String(cString: number.objCType)
        return type == "c" || type == "B"
    }

    private static func isFloatingPoint(_ number: NSNumber) -> Bool {
        let type = String(cString: number.objCType)
        return type == "d" || type == "f"
    }
}

extension Optional: ParameterTree.OptionalValue {
    fileprivate var wrapped: Any? { self.map { $0 as Any } }
}
