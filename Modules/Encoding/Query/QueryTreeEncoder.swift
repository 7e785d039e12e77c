import Foundation

/// A node of the tree an `Encodable` value writes, filled in by containers after they are
/// handed out (hence a reference).
final class QueryNodeBuilder {
    enum Content {
        case empty
        case value(QueryNode)
        case keyed([String: QueryNodeBuilder])
        case unkeyed([QueryNodeBuilder])
    }

    var content: Content = .empty

    /// The finished node; keys sorted.
    var node: QueryNode {
        switch content {
        case .empty: .null
        case .value(let node): node
        case .keyed(let children): .map(children.keys.sorted().map { ($0, children[$0]!.node) })
        case .unkeyed(let children): .list(children.map(\.node))
        }
    }

    func child(forKey key: String) -> QueryNodeBuilder {
        var children: [String: QueryNodeBuilder] = [:]
        if case .keyed(let existing) = content { children = existing }
        if let existing = children[key] { return existing }
        let child = QueryNodeBuilder()
        children[key] = child
        content = .keyed(children)
        return child
    }

    func appendChild() -> QueryNodeBuilder {
        var children: [QueryNodeBuilder] = []
        if case .unkeyed(let existing) = content { children = existing }
        let child = QueryNodeBuilder()
        children.append(child)
        content = .unkeyed(children)
        return child
    }

    func makeKeyed() { if case .keyed = content {} else { content = .keyed([:]) } }
    func makeUnkeyed() { if case .unkeyed = content {} else { content = .unkeyed([]) } }
}

/// A coding key for an array index or a made-up name.
struct QueryCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

/// The `Encoder` behind ``QueryEncoder``: writes a value into a ``QueryNodeBuilder``.
struct QueryTreeEncoder: Encoder {
    let builder: QueryNodeBuilder
    let format: QueryFormat
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        builder.makeKeyed()
        return KeyedEncodingContainer(KeyedQueryContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        builder.makeUnkeyed()
        return UnkeyedQueryContainer(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueQueryContainer(encoder: self)
    }

    /// An encoder for a child value at `key`.
    func child(_ builder: QueryNodeBuilder, key: any CodingKey) -> QueryTreeEncoder {
        QueryTreeEncoder(builder: builder, format: format, codingPath: codingPath + [key])
    }

    /// Writes `value` into `target`, at `path`: scalars directly, anything else through its
    /// own `encode(to:)`.
    func write(_ value: some Encodable, into target: QueryNodeBuilder, path: [any CodingKey]) throws {
        switch QueryNode.scalar(for: value, format: format) {
        case .node(let node):
            target.content = .value(node)
        case .invalid(let message):
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: path, debugDescription: message))
        case .composite:
            try value.encode(to: QueryTreeEncoder(builder: target, format: format, codingPath: path))
        }
    }
}

struct KeyedQueryContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: QueryTreeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil(forKey key: Key) throws { encoder.builder.child(forKey: key.stringValue).content = .value(.null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: String, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try put(value, key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try put(value, key) }

    private func put(_ value: some Encodable, _ key: Key) throws {
        try encoder.write(value, into: encoder.builder.child(forKey: key.stringValue), path: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        encoder.child(encoder.builder.child(forKey: key.stringValue), key: key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        encoder.child(encoder.builder.child(forKey: key.stringValue), key: key).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let key = QueryCodingKey(stringValue: "super")
        return encoder.child(encoder.builder.child(forKey: key.stringValue), key: key)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        encoder.child(encoder.builder.child(forKey: key.stringValue), key: key)
    }
}

struct UnkeyedQueryContainer: UnkeyedEncodingContainer, ValueForwarding {
    let encoder: QueryTreeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int {
        if case .unkeyed(let children) = encoder.builder.content { return children.count }
        return 0
    }

    mutating func encodeNil() throws { encoder.builder.appendChild().content = .value(.null) }

    func put(_ value: some Encodable) throws {
        let key = QueryCodingKey(intValue: count)
        try encoder.write(value, into: encoder.builder.appendChild(), path: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let key = QueryCodingKey(intValue: count)
        return encoder.child(encoder.builder.appendChild(), key: key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = QueryCodingKey(intValue: count)
        return encoder.child(encoder.builder.appendChild(), key: key).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let key = QueryCodingKey(intValue: count)
        return encoder.child(encoder.builder.appendChild(), key: key)
    }
}

struct SingleValueQueryContainer: SingleValueEncodingContainer, ValueForwarding {
    let encoder: QueryTreeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.builder.content = .value(.null) }

    func put(_ value: some Encodable) throws {
        try encoder.write(value, into: encoder.builder, path: codingPath)
    }
}

/// The primitive `encode` overloads unkeyed and single-value containers must have, all
/// forwarded to one generic `put`.
protocol ValueForwarding {
    func put(_ value: some Encodable) throws
}

extension ValueForwarding {
    mutating func encode(_ value: Bool) throws { try put(value) }
    mutating func encode(_ value: String) throws { try put(value) }
    mutating func encode(_ value: Double) throws { try put(value) }
    mutating func encode(_ value: Float) throws { try put(value) }
    mutating func encode(_ value: Int) throws { try put(value) }
    mutating func encode(_ value: Int8) throws { try put(value) }
    mutating func encode(_ value: Int16) throws { try put(value) }
    mutating func encode(_ value: Int32) throws { try put(value) }
    mutating func encode(_ value: Int64) throws { try put(value) }
    mutating func encode(_ value: UInt) throws { try put(value) }
    mutating func encode(_ value: UInt8) throws { try put(value) }
    mutating func encode(_ value: UInt16) throws { try put(value) }
    mutating func encode(_ value: UInt32) throws { try put(value) }
    mutating func encode(_ value: UInt64) throws { try put(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try put(value) }
}
