package import Foundation

/// A store's map of the columns an entry is read from: one enum per store, whose cases are the
/// columns in the order every query of that store selects them. Each case is named as its
/// column in camel case (`idempotencyKey` for `idempotency_key`) and its raw value is the
/// column's position, so a row is read at fixed positions, never looked up by name.
///
/// ```swift
/// enum Column: Int, EntryColumnMap { case id, idempotencyKey, state }
/// Column.columnNames()   // ["id", "idempotency_key", "state"]
/// row[Column.state.rawValue]
/// ```
package protocol EntryColumnMap: CaseIterable, RawRepresentable where RawValue == Int {}

extension EntryColumnMap {
    /// The columns' names in the schema, in order. Each map keeps them in a `static let`.
    package static func columnNames() -> [String] {
        allCases.map { column in
            var name = ""
            for character in String(describing: column) {
                if character.isUppercase { name += "_" + character.lowercased() } else { name.append(character) }
            }
            return name
        }
    }
}

/// A row holding a value this version does not know (a state, a dead reason): an error that
/// names the row, never read as another value. Each store reports it as
/// ``QueueError/corruptDatabase(path:reason:)``.
package struct UnknownStoredValue: Error, CustomStringConvertible {
    package let id: EntryID
    package let column: String
    package let value: String

    package var description: String { "entry \(id) has \(column) '\(value)', which this version does not know" }

    /// The error, of the queue at `location`.
    package func corruptDatabase(_ location: String) -> QueueError {
        .corruptDatabase(path: location, reason: description)
    }

    package static func state(_ text: String, id: EntryID) throws(UnknownStoredValue) -> EntryState {
        guard let state = EntryState(rawValue: text) else { throw UnknownStoredValue(id: id, column: "state", value: text) }
        return state
    }

    package static func deadReason(_ text: String?, id: EntryID) throws(UnknownStoredValue) -> EntryLifecycle.DeadReason? {
        guard let text else { return nil }
        guard let reason = EntryLifecycle.DeadReason(rawValue: text) else { throw UnknownStoredValue(id: id, column: "dead reason", value: text) }
        return reason
    }
}

extension Optional where Wrapped == StoredBody {
    /// The row's columns for this body: its bytes in the row, or the name it is kept apart
    /// under (a file, chunks), or neither. Inverse of ``StoredBody/init(inline:file:length:)``.
    package var columns: (inline: Data?, file: String?) {
        switch self {
        case .inline(let data)?: (data, nil)
        case .file(let name, _)?: (nil, name)
        case nil: (nil, nil)
        }
    }
}

extension StoredBody {
    /// A row's body: its file when the row names one, else its bytes in the row, else none.
    package init?(inline: Data?, file: String?, length: Int?) {
        if let file {
            self = .file(name: file, length: length ?? 0)
        } else if let inline {
            self = .inline(inline)
        } else {
            return nil
        }
    }
}
