public import HTTPTypes

extension HTTPField.Name {
    /// The header fields that carry credentials: `Authorization`, `Proxy-Authorization`,
    /// `Cookie`, `X-API-Key`, `Api-Key` and `X-Auth-Token`.
    ///
    /// One set serves every rule that keeps a credential in its place: the client drops these
    /// fields when a redirect leaves the origin, the offline queue does not store them unless
    /// told to, and logs and `sync show` redact them. Add your own through
    /// ``ClientConfiguration/credentialFields`` (and the queue's `secretHeaders`), or mark a
    /// field on one request with ``PreparedRequest/credentialFields``.
    public static let credentialFields: Set<HTTPField.Name> = [
        .authorization, .proxyAuthorization, .cookie,
        HTTPField.Name("X-API-Key")!, HTTPField.Name("Api-Key")!, HTTPField.Name("X-Auth-Token")!,
    ]
}
