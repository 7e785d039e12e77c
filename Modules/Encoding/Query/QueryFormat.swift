public import Foundation

/// How values that have no single obvious query form are written: arrays, booleans and dates.
///
/// One format serves ``URLEncoding`` (`[String: Any]` parameters) and ``QueryEncoder``
/// (`Encodable` values), so both write the same query for the same data.
///
/// ```swift
/// let format = QueryFormat(arrays: .repeatedKeys, bools: .literal, dates: .secondsSince1970)
/// let query = try URLEncoding(destination: .queryString, format: format)
///     .percentEncodedQuery(["tag": ["a", "b"], "draft": true])
/// // "draft=true&tag=a&tag=b"
/// ```
///
/// Names and values are percent-encoded per RFC 3986 (see `PercentEncoding`), so the brackets
/// of `a[]` and `user[name]` travel as `%5B` and `%5D`; servers decode them back.
public struct QueryFormat: Sendable {
    /// How an array becomes query pairs.
    public enum ArrayStyle: Sendable, Hashable, CaseIterable {
        /// `a[]=1&a[]=2` (Rails, PHP, Alamofire's default).
        case brackets
        /// `a=1&a=2` (OpenAPI `form` with `explode`).
        case repeatedKeys
        /// `a=1,2` (OpenAPI `form` without `explode`); values are encoded one by one and
        /// joined with a literal comma. Arrays holding arrays or dictionaries fall back to
        /// ``indexed``.
        case commaSeparated
        /// `a[0]=1&a[1]=2`.
        case indexed
    }

    /// How a Boolean is written.
    public enum BoolStyle: Sendable, Hashable, CaseIterable {
        /// `1` and `0` (Alamofire's default).
        case numeric
        /// `true` and `false`.
        case literal
    }

    /// How a `Date` is written.
    public enum DateStyle: Sendable {
        /// ISO 8601 in UTC with seconds, such as `2023-11-14T22:13:20Z`.
        case iso8601
        /// Seconds since 1970 (`1700000000`, or `1700000000.5` with a fraction).
        case secondsSince1970
        /// Whole milliseconds since 1970 (`1700000000000`).
        case millisecondsSince1970
        /// A `DateFormatter` pattern such as `"yyyy-MM-dd"`, in the given time zone, with the
        /// `en_US_POSIX` locale.
        case formatted(String, timeZone: TimeZone = TimeZone(identifier: "UTC")!)
        /// Your own function; a thrown error becomes an encoding error at the value's key path.
        case custom(@Sendable (Date) throws -> String)
    }

    /// How arrays become pairs.
    public var arrays: ArrayStyle
    /// How Booleans are written.
    public var bools: BoolStyle
    /// How dates are written.
    public var dates: DateStyle

    /// A format; by default `a[]=1`, `1`/`0` and ISO 8601, as Alamofire writes them.
    public init(arrays: ArrayStyle = .brackets, bools: BoolStyle = .numeric, dates: DateStyle = .iso8601) {
        self.arrays = arrays
        self.bools = bools
        self.dates = dates
    }
}

extension QueryFormat.DateStyle {
    /// `date` written in this style.
    func string(from date: Date) throws -> String {
        switch self {
        case .iso8601:
            return date.ISO8601Format()
        case .secondsSince1970:
            return Self.number(date.timeIntervalSince1970)
        case .millisecondsSince1970:
            return String(Int64((date.timeIntervalSince1970 * 1000).rounded()))
        case .formatted(let pattern, let timeZone):
            // DateFormatter is built per use: it is neither cheap to share across tasks nor
            // guaranteed Sendable on every platform.
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = timeZone
            formatter.dateFormat = pattern
            return formatter.string(from: date)
        case .custom(let write):
            return try write(date)
        }
    }

    private static func number(_ seconds: Double) -> String {
        if seconds == seconds.rounded(), abs(seconds) < 1e15 { return String(Int64(seconds)) }
        return String(seconds)
    }
}
