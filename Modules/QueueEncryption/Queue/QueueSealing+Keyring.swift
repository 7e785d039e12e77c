public import OfflineQueueCore

extension QueueSealing {
    /// Sealing in `mode` with `keyring`: its primary key seals, every key opens what it
    /// sealed. `.off` with a keyring seals nothing new and still opens entries sealed earlier.
    public init(mode: Mode = .off, keyring: Keyring? = nil) {
        self.init(mode: mode, sealer: keyring.map(KeyringSealer.init(keyring:)))
    }

    /// The keys: the primary seals, every key opens what it sealed.
    public var keyring: Keyring? {
        get { (sealer as? KeyringSealer)?.keyring }
        set { sealer = newValue.map(KeyringSealer.init(keyring:)) }
    }

    /// Seals new entries with `keyring`'s primary key; reads entries in clear.
    public static func on(_ keyring: Keyring) -> QueueSealing { QueueSealing(mode: .on, keyring: keyring) }

    /// Seals new entries with `keyring`'s primary key and refuses anything in clear.
    public static func required(_ keyring: Keyring) -> QueueSealing { QueueSealing(mode: .required, keyring: keyring) }
}

extension OfflineQueue {
    /// Seals the entries `scope` picks again under `keyring`'s primary key, in batches of
    /// `batchSize`, each one transaction: an interrupted run (a `kill -9`) leaves every entry
    /// under its old seal or its new one, and a second run finishes the job. Entries in flight
    /// are left for a later run (`QueueSealing.ResealSummary.skipped`). Bodies kept apart are written
    /// anew before their batch commits and the old ones removed after it; an interruption
    /// leaves unreferenced bodies, which the orphan sweep removes.
    ///
    /// - Throws: `QueueError.Kind.keyUnavailable` when the keyring lacks a key the entries
    ///   need or holds other bytes under a recorded id (before anything changes);
    ///   `QueueError.Kind.sealBroken` for an entry that does not open (the batches before it
    ///   stay committed; it is left as it is).
    public func reseal(_ scope: QueueSealing.ResealScope, keyring: Keyring, batchSize: Int = 64) async throws(QueueError) -> QueueSealing.ResealSummary {
        try await reseal(scope, sealer: KeyringSealer(keyring: keyring), batchSize: batchSize)
    }
}
