import ArgumentParser

/// Options given in seconds (`--timeout`, `--poll`): range-checked before anything converts
/// them, since `inf`, `nan` and `1e300` parse as numbers and would trap in a conversion.
enum Seconds {
    /// The longest value an option in seconds takes: one day.
    static let limit: Double = 86_400

    /// Throws a usage error naming `option` unless `value` is above zero and at most a day.
    static func check(_ value: Double, option: String) throws {
        guard value.isFinite, value > 0, value <= limit else {
            throw ValidationError("\(option) must be a number of seconds above 0 and at most \(Int(limit)) (one day), not \(value)")
        }
    }

    /// `value` (checked) as a duration, to the millisecond.
    static func duration(_ value: Double) -> Duration {
        .milliseconds(Int64((min(max(value, 0), limit) * 1000).rounded()))
    }
}
