/// How an entry is linked to others (``EnqueueOptions/after``): what it waits for, and what
/// waits for it. Ids of entries purged or removed by retention since stay listed among an
/// entry's parents.
public struct EntryDependencies: Sendable, Hashable, Codable {
    /// The entries it waits for, in id order.
    public var parents: [EntryID]
    /// The entries that wait for it, in id order.
    public var children: [EntryID]
    /// What it does when a parent dies; `nil` when it waits for none.
    public var whenParentDies: ParentDeathPolicy?

    /// Links as given: the entries it waits for and those that wait for it; none by default.
    public init(parents: [EntryID] = [], children: [EntryID] = [], whenParentDies: ParentDeathPolicy? = nil) {
        self.parents = parents
        self.children = children
        self.whenParentDies = whenParentDies
    }
}
