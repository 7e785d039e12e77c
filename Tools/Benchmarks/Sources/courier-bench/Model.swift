/// The model both sides decode: the ~1 KB page `bench-server` serves.
struct Page: Decodable, Sendable {
    struct Item: Decodable, Sendable {
        var id: Int
        var name: String
        var price: Double
        var tags: [String]
        var inStock: Bool
    }

    var page: Int
    var total: Int
    var items: [Item]
}
