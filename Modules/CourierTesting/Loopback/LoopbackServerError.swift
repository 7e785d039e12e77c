/// A loopback server that could not do what was asked.
public struct LoopbackServerError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    init(_ description: String) { self.description = description }
}
