import Foundation
import HTTPCore

/// A value on its way into a query: the common tree `[String: Any]` parameters and
/// `Encodable` values are turned into before they are flattened into pairs.
indirect enum QueryNode {
    /// A value already written as text.
    case scalar(String)
    /// A Boolean, written by the format's ``QueryFormat/BoolStyle``.
    case bool(Bool)
    /// Nothing: `nil` or `NSNull`; omitted from the query.
    case null
    /// An array.
    case list([QueryNode])
    /// A dictionary or keyed value, keys sorted.
    case map([(key: String, value: QueryNode)])
}

/// The result of looking at one value that might be a scalar.
enum ScalarConversion {
    /// A scalar, as a node.
    case node(QueryNode)
    /// Not a scalar: an array, a dictionary or a composite `Encodable`.
    case composite
    /// A scalar that has no valid form (NaN, infinity, a failing date style).
    case invalid(String)
}

extension QueryNode {
    /// The node for `value` when it is a scalar Courier knows how to write: strings, numbers,
    /// Booleans, dates, URLs, UUIDs, decimals and data (Base64).
    static func scalar(for value: Any, format: QueryFormat) -> ScalarConversion {
        switch value {
        case let bool as Bool where type(of: value) == Bool.self:
            return .node(.bool(bool))
        case let string as String:
            return .node(.scalar(string))
        case let string as Substring:
            return .node(.scalar(String(string)))
        case let character as Character:
            return .node(.scalar(String(character)))
        case let integer as any BinaryInteger:
            return .node(.scalar(String(describing: integer)))
        case let number as any BinaryFloatingPoint:
            guard number.isFinite else { return .invalid("\(number) is not a finite number") }
            return .node(.scalar(String(describing: number)))
        case let decimal as Decimal:
            guard !decimal.isNaN else { return .invalid("NaN is not a number") }
            return .node(.scalar(decimal.description))
        case let date as Date:
            do { return .node(.scalar(try format.dates.string(from: date))) } catch {
                return .invalid("date style failed: \(error)")
            }
        case let url as URL:
            return .node(.scalar(url.absoluteString))
        case let uuid as UUID:
            return .node(.scalar(uuid.uuidString))
        case let data as Data:
            return .node(.scalar(data.base64EncodedString()))
        default:
            return .composite
        }
    }

    /// The percent-encoded `name=value` pairs of `entries`, in order, for `style`.
    static func pairs(_ entries: [(key: String, value: QueryNode)], format: QueryFormat) -> [(name: String, value: String?)] {
        var out: [(name: String, value: String?)] = []
        for entry in entries { entry.value.append(name: entry.key, format: format, to: &out) }
        return out
    }

    private func append(name: String, format: QueryFormat, to out: inout [(name: String, value: String?)]) {
        switch self {
        case .null:
            return
        case .scalar(let text):
            out.append((PercentEncoding.encode(name), PercentEncoding.encode(text)))
        case .bool(let bool):
            let text = switch format.bools {
            case .numeric: bool ? "1" : "0"
            case .literal: bool ? "true" : "false"
            }
            out.append((PercentEncoding.encode(name), text))
        case .map(let entries):
            for entry in entries { entry.value.append(name: "\(name)[\(entry.key)]", format: format, to: &out) }
        case .list(let items):
            appendList(items, name: name, format: format, to: &out)
        }
    }

    private func appendList(_ items: [QueryNode], name: String, format: QueryFormat, to out: inout [(name: String, value: String?)]) {
        switch format.arrays {
        case .brackets:
            for item in items { item.append(name: name + "[]", format: format, to: &out) }
        case .repeatedKeys:
            for item in items { item.append(name: name, format: format, to: &out) }
        case .indexed:
            for (index, item) in items.enumerated() { item.append(name: "\(name)[\(index)]", format: format, to: &out) }
        case .commaSeparated:
            var values: [String] = []
            for item in items {
                var single: [(name: String, value: String?)] = []
                switch item {
                case .scalar, .bool: item.append(name: name, format: format, to: &single)
                case .null: continue
                case .list, .map:
                    var indexed = format
                    indexed.arrays = .indexed
                    return appendList(items, name: name, format: indexed, to: &out)
                }
                values.append(contentsOf: single.compactMap(\.value))
            }
            if !values.isEmpty { out.append((PercentEncoding.encode(name), values.joined(separator: ","))) }
        }
    }
}

extension Array where Element == (name: String, value: String?) {
    /// The pairs joined as `a=1&b=2`, as they go in a query or a form body.
    var joinedQuery: String {
        map { pair in pair.value.map { "\(pair.name)=\($0)" } ?? pair.name }.joined(separator: "&")
    }
}
