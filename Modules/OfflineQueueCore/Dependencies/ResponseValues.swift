import Foundation
import HTTPTypes

/// The kept responses of a child's parents, and the values its references take from them
/// (``ResponseReference``), put where each goes: a URL segment, a header value, a JSON body.
/// Every failure names the reference: the entry dies with it, unsent.
struct ResponseValues {
    /// The responses by the entry that kept them; a parent that kept none (it died, or was
    /// removed) is absent.
    let responses: [EntryID: KeptResponse]

    /// Why a reference does not resolve.
    struct Unresolved: Error, CustomStringConvertible {
        let reference: ResponseReference
        let why: String
        var description: String { "response reference \(reference) does not resolve: \(why); not sent" }
    }

    /// A referenced value: its JSON text, and its text where it has one (a string's
    /// characters, a number's or a boolean's literal; none for null, an object or an array).
    struct Value {
        let json: String
        let text: String?
        let kind: String
    }

    func value(of reference: ResponseReference) throws(Unresolved) -> Value {
        guard let response = responses[reference.entry] else {
            throw Unresolved(reference: reference, why: "entry \(reference.entry) has no kept response (it was not delivered, or was removed)")
        }
        switch reference.part {
        case .status:
            return Value(json: String(response.status), text: String(response.status), kind: "a number")
        case .header(let name):
            guard let value = response.header(name) else {
                throw Unresolved(reference: reference, why: "the response of entry \(reference.entry) had no header field \(name)")
            }
            return Value(json: JSONText.quoted(value), text: value, kind: "a string")
        case .json(let pointer):
            guard !response.truncated else {
                throw Unresolved(reference: reference, why: "the kept body of entry \(reference.entry) was cut at \(response.body.count) bytes (raise its ResponseKeeping.bodyLimit)")
            }
            let bytes = [UInt8](response.body)
            guard (try? JSONSerialization.jsonObject(with: response.body, options: [.fragmentsAllowed])) != nil else {
                throw Unresolved(reference: reference, why: "the body of entry \(reference.entry)'s response is not JSON")
            }
            do throws(JSONText.Missing) {
                let range = try JSONText.locate(pointer, in: bytes)
                let json = String(decoding: bytes[range], as: UTF8.self)
                switch bytes[range.lowerBound] {
                case UInt8(ascii: "\""):
                    guard let text = try? JSONSerialization.jsonObject(with: Data(bytes[range]), options: [.fragmentsAllowed]) as? String else {
                        throw JSONText.Missing(at: pointer, why: "a string that does not decode")
                    }
                    return Value(json: json, text: text, kind: "a string")
                case UInt8(ascii: "{"): return Value(json: json, text: nil, kind: "an object")
                case UInt8(ascii: "["): return Value(json: json, text: nil, kind: "an array")
                case UInt8(ascii: "n"): return Value(json: json, text: nil, kind: "null")
                default: return Value(json: json, text: json, kind: json == "true" || json == "false" ? "a boolean" : "a number")
                }
            } catch {
                throw Unresolved(reference: reference, why: "the body of entry \(reference.entry)'s response has \(error.description)")
            }
        }
    }

    /// `url` with each reference's text put in as one percent-encoded segment.
    func url(_ url: String) throws(Unresolved) -> String {
        try substitute(url) { value, reference throws(Unresolved) in
            guard let text = value.text else {
                throw Unresolved(reference: reference, why: "its value is \(value.kind), not a value for a URL")
            }
            return text.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? ""
        }
    }

    /// A header value with each reference's text put in; the value must still be one.
    func header(_ value: String) throws(Unresolved) -> String {
        var last: ResponseReference?
        let resolved = try substitute(value) { value, reference throws(Unresolved) in
            last = reference
            guard let text = value.text else {
                throw Unresolved(reference: reference, why: "its value is \(value.kind), not a value for a header field")
            }
            // Header values are read for templates next: a server's text must not become one.
            guard !text.contains("${") else {
                throw Unresolved(reference: reference, why: "its value holds '${', which a header would read as a template")
            }
            return text
        }
        if let last, !HTTPField.isValidValue(resolved) || resolved.contains(where: { $0 == "\r" || $0 == "\n" }) {
            throw Unresolved(reference: last, why: "the header value it makes is not valid (a line break or a control character)")
        }
        return resolved
    }

    /// A body with each reference put in as JSON: a whole JSON string placeholder, or one
    /// outside any string, becomes the value; one inside a longer string becomes its text,
    /// escaped for the string.
    func body(_ body: Data) throws(Unresolved) -> Data {
        let text = String(decoding: body, as: UTF8.self)
        let occurrences: [(reference: ResponseReference, range: Range<String.Index>)]
        do { occurrences = try ResponseReference.occurrences(in: text) } catch {
            // Checked at enqueue: only a body changed since (it cannot be) lands here.
            throw Unresolved(reference: ResponseReference(entry: 0, part: .status), why: error.description)
        }
        guard !occurrences.isEmpty else { return body }
        var result = ""
        result.reserveCapacity(text.utf8.count)
        let scalars = text.unicodeScalars
        var position = text.startIndex
        var inString = false
        var escaped = false
        // Where the string the scan is in opened.
        var opening = text.startIndex
        for (reference, range) in occurrences {
            // Whether the placeholder stands inside a JSON string: the quotes before it, counted.
            var index = position
            while index < range.lowerBound {
                let scalar = scalars[index]
                if escaped {
                    escaped = false
                } else if inString && scalar == "\\" {
                    escaped = true
                } else if scalar == "\"" {
                    inString.toggle()
                    opening = index
                }
                index = scalars.index(after: index)
            }
            let value = try value(of: reference)
            var before = text[position..<range.lowerBound]
            // The whole string: opened just before it, closed just after.
            let whole = inString && scalars.index(after: opening) == range.lowerBound && text[range.upperBound...].first == "\""
            if whole {
                before = before.dropLast()
                result += before
                result += value.json
                position = text.index(after: range.upperBound)
                inString = false
                continue
            }
            result += before
            if inString {
                result += JSONText.escaped(value.text ?? value.json)
            } else {
                result += value.json
            }
            position = range.upperBound
        }
        result += text[position...]
        return Data(result.utf8)
    }

    private func substitute(
        _ text: String, _ insert: (Value, ResponseReference) throws(Unresolved) -> String
    ) throws(Unresolved) -> String {
        let occurrences: [(reference: ResponseReference, range: Range<String.Index>)]
        do { occurrences = try ResponseReference.occurrences(in: text) } catch {
            throw Unresolved(reference: ResponseReference(entry: 0, part: .status), why: error.description)
        }
        guard !occurrences.isEmpty else { return text }
        var result = ""
        var position = text.startIndex
        for (reference, range) in occurrences {
            result += text[position..<range.lowerBound]
            result += try insert(try value(of: reference), reference)
            position = range.upperBound
        }
        result += text[position...]
        return result
    }

    /// RFC 3986's unreserved characters: a value put in a URL keeps these, and every other
    /// byte is percent-encoded, so it stays one segment (or one query value).
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}

/// JSON as text: locating a value by JSON Pointer in a document's bytes (the value's exact
/// bytes, so a number keeps its digits), and escaping text for a JSON string.
enum JSONText {
    struct Missing: Error, CustomStringConvertible {
        let at: String
        let why: String
        var description: String { "\(why) at \(at.isEmpty ? "its root" : at)" }
    }

    /// The bytes of the value `pointer` names in `document`, which is valid JSON.
    static func locate(_ pointer: String, in document: [UInt8]) throws(Missing) -> Range<Int> {
        var start = skipSpace(document, 0)
        var walked = ""
        for rawToken in pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            let token = rawToken.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            guard start < document.count else { throw Missing(at: walked, why: "no value") }
            switch document[start] {
            case UInt8(ascii: "{"):
                start = try member(token, of: document, at: start, walked: walked)
            case UInt8(ascii: "["):
                start = try element(token, of: document, at: start, walked: walked)
            default:
                throw Missing(at: walked, why: "no member \(token.debugDescription) (not an object or an array)")
            }
            walked += "/" + rawToken
        }
        return start..<valueEnd(document, start)
    }

    private static func member(_ token: String, of document: [UInt8], at open: Int, walked: String) throws(Missing) -> Int {
        var index = skipSpace(document, open + 1)
        while index < document.count, document[index] == UInt8(ascii: "\"") {
            let keyEnd = valueEnd(document, index)
            let key = decodedString(document[index..<keyEnd])
            index = skipSpace(document, skipSpace(document, keyEnd) + 1)   // past the ':'
            if key == token { return index }
            index = skipSpace(document, valueEnd(document, index))
            if index < document.count, document[index] == UInt8(ascii: ",") { index = skipSpace(document, index + 1) }
        }
        throw Missing(at: walked, why: "no member \(token.debugDescription)")
    }

    private static func element(_ token: String, of document: [UInt8], at open: Int, walked: String) throws(Missing) -> Int {
        guard let wanted = Int(token), wanted >= 0, token == String(wanted) else {
            throw Missing(at: walked, why: "\(token.debugDescription), not an index, in an array")
        }
        var index = skipSpace(document, open + 1)
        var position = 0
        while index < document.count, document[index] != UInt8(ascii: "]") {
            if position == wanted { return index }
            index = skipSpace(document, valueEnd(document, index))
            if index < document.count, document[index] == UInt8(ascii: ",") { index = skipSpace(document, index + 1) }
            position += 1
        }
        throw Missing(at: walked, why: "no element \(wanted) (the array has \(position))")
    }

    private static func decodedString(_ bytes: ArraySlice<UInt8>) -> String {
        guard bytes.contains(UInt8(ascii: "\\")) else { return String(decoding: bytes.dropFirst().dropLast(), as: UTF8.self) }
        return (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) as? String) ?? ""
    }

    private static func skipSpace(_ bytes: [UInt8], _ start: Int) -> Int {
        var index = start
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        return index
    }

    /// Where the value that starts at `start` ends (exclusive).
    private static func valueEnd(_ bytes: [UInt8], _ start: Int) -> Int {
        guard start < bytes.count else { return start }
        var index = start
        switch bytes[start] {
        case UInt8(ascii: "\""):
            index += 1
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            return min(index + 1, bytes.count)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    index = valueEnd(bytes, index)
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default:
                    break
                }
                index += 1
            }
            return index
        default:
            while index < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) {
                index += 1
            }
            return index
        }
    }

    /// `text` as a JSON string literal, quotes included.
    static func quoted(_ text: String) -> String { "\"" + escaped(text) + "\"" }

    /// `text` escaped for the inside of a JSON string.
    static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
