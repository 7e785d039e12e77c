import Foundation
import HTTPCore
import HTTPTypes

/// What enqueue does with a header listed in ``QueueConfiguration/secretHeaders`` whose value
/// is not a template.
public enum SecretHandling: Sendable, Hashable {
    /// Leave it out of the stored request; the plugins of the request's scopes (an
    /// authenticator) add a fresh one at replay. The default.
    case drop
    /// Store it as is. The database then holds a credential: keep the file private.
    case store
    /// Refuse the enqueue with ``QueueError/secretHeader(name:)``.
    case reject
}
