public import Foundation

/// Parsing of the `Retry-After` header (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
public enum RetryAfter {
    /// The delay `value` asks for, measured from `now`; `nil` when it is neither form.
    /// A date in the past means no delay; a delay longer than `Duration.longestInput` is
    /// clamped to it.
    public static func delay(from value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) {
            return seconds >= 0 ? min(.seconds(seconds), .longestInput) : nil
        }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        // A date far in the future (year 99999999, say) is clamped, never converted as it is.
        return Duration.clamped(seconds: date.timeIntervalSince(now)) ?? .zero
    }
}

/// HTTP-date parsing (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms.
public enum HTTPDate {
    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz",
        "EEEE, dd-MMM-yy HH:mm:ss zzz",
        "EEE MMM d HH:mm:ss yyyy",
    ]

    /// One formatter per format, made once: making a `DateFormatter` costs far more than
    /// parsing with one, and the cache asks for dates on every lookup. `DateFormatter` is not
    /// safe to use from two threads at once, so they are used under the lock.
    private static let formatters = LockedBox(formats.map { format in
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = format
        return formatter
    })

    /// The date `string` names, or `nil`.
    public static func parse(_ string: String) -> Date? {
        formatters.withLock { formatters in
            for formatter in formatters {
                if let date = formatter.date(from: string) { return date }
            }
            return nil
        }
    }

    /// `date` as an IMF-fixdate, such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    public static func format(_ date: Date) -> String {
        formatters.withLock { $0[0].string(from: date) }
    }
}
