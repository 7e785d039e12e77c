public import Hummingbird

/// The request context of the console's router: Hummingbird's core storage and the user the
/// authentication middleware signed in (`nil` only on `/healthz` and the stylesheet).
public struct ConsoleContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The signed-in user.
    public var user: ConsoleUser?

    public init(source: Source) {
        coreContext = .init(source: source)
        user = nil
    }
}
