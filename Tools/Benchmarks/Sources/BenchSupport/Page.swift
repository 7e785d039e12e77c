/// The model both sides decode: the ~1 KB page `bench-server` serves.
public struct Page: Decodable, Sendable {
    public struct Item: Decodable, Sendable {
        public var id: Int
        public var name: String
        public var price: Double
        public var tags: [String]
        public var inStock: Bool
    }

    public var page: Int
    public var total: Int
    public var items: [Item]
}
