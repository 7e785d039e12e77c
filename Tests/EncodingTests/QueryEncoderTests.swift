import Encoding
import Foundation
import HTTPCore
import HTTPTypes
import Testing

struct Search: Encodable, Sendable {
    struct Filter: Encodable, Sendable {
        var status: String
        var ratio: Double
    }
    var q: String
    var page: Int?
    var tags: [String]
    var archived: Bool
    var filter: Filter?
}

@Suite struct QueryEncoderTests {
    let search = Search(q: "swift & nio", page: nil, tags: ["a", "b"], archived: false, filter: .init(status: "open", ratio: 0.5))

    @Test func nilOmittedNestedKeysSorted() throws {
        let query = try QueryEncoder().percentEncodedQuery(search)
        #expect(query.removingPercentEncoding == "archived=0&filter[ratio]=0.5&filter[status]=open&q=swift & nio&tags[]=a&tags[]=b")
        #expect(query.contains("q=swift%20%26%20nio"))
    }

    @Test(arguments: [
        (QueryFormat.ArrayStyle.brackets, "tags[]=a&tags[]=b"),
        (.repeatedKeys, "tags=a&tags=b"),
        (.commaSeparated, "tags=a,b"),
        (.indexed, "tags[0]=a&tags[1]=b"),
    ])
    func arrayStyles(style: QueryFormat.ArrayStyle, expected: String) throws {
        struct Tags: Encodable { var tags: [String] }
        #expect(try QueryEncoder(arrays: style).percentEncodedQuery(Tags(tags: ["a", "b"])).removingPercentEncoding == expected)
    }

    @Test func boolStyles() throws {
        struct Flags: Encodable { var on: Bool; var off: Bool }
        #expect(try QueryEncoder(bools: .literal).percentEncodedQuery(Flags(on: true, off: false)) == "off=false&on=true")
        #expect(try QueryEncoder(bools: .numeric).percentEncodedQuery(Flags(on: true, off: false)) == "off=0&on=1")
    }

    @Test func dateStrategies() throws {
        struct Since: Encodable { var since: Date }
        let value = Since(since: Date(timeIntervalSince1970: 1_700_000_000.25))
        func encoded(_ style: QueryFormat.DateStyle) throws(NetworkError) -> String? {
            let query = try QueryEncoder(dates: style).percentEncodedQuery(value)
            return query.removingPercentEncoding
        }
        #expect(try encoded(.iso8601) == "since=2023-11-14T22:13:20Z")
        #expect(try encoded(.secondsSince1970) == "since=1700000000.25")
        #expect(try encoded(.millisecondsSince1970) == "since=1700000000250")
        #expect(try encoded(.formatted("yyyy-MM-dd HH:mm")) == "since=2023-11-14 22:13")
        #expect(try encoded(.custom { "day-\(Int($0.timeIntervalSince1970) / 86_400)" }) == "since=day-19675")
        let whole = try QueryEncoder(dates: .secondsSince1970).percentEncodedQuery(Since(since: Date(timeIntervalSince1970: 0)))
        #expect(whole == "since=0")
    }

    @Test func failingCustomDateStyleNamesItsKeyPath() {
        struct Failing: Error {}
        struct Event: Encodable { var at: [Date] }
        let encoder = QueryEncoder(dates: .custom { _ in throw Failing() })
        #expect(encodingFailure { _ = try encoder.percentEncodedQuery(Event(at: [Date()])) }?.keyPath == ["at", "0"])
    }

    @Test func nanNamesItsKeyPath() {
        var bad = search
        bad.filter?.ratio = .nan
        let failure = encodingFailure { _ = try QueryEncoder().percentEncodedQuery(bad) }
        #expect(failure?.keyPath == ["filter", "ratio"])
    }

    @Test func topLevelMustBeKeyed() {
        #expect(encodingFailure { _ = try QueryEncoder().percentEncodedQuery([1, 2]) }?.message.contains("top level") == true)
        #expect(encodingFailure { _ = try QueryEncoder().percentEncodedQuery("text") } != nil)
    }

    @Test func dictionariesAndQueryItems() throws {
        let items = try QueryEncoder(arrays: .commaSeparated).queryItems(["b": [1, 2], "a": [3]])
        #expect(items == [URLQueryItem(name: "a", value: "3"), URLQueryItem(name: "b", value: "1,2")])
    }

    @Test func sameQueryAsURLEncodingForTheSameData() throws {
        let format = QueryFormat(arrays: .indexed, bools: .literal)
        let fromEncodable = try QueryEncoder(format: format).percentEncodedQuery(search)
        let fromParameters = try URLEncoding(format: format).percentEncodedQuery([
            "q": "swift & nio", "tags": ["a", "b"], "archived": false, "filter": ["status": "open", "ratio": 0.5],
        ])
        #expect(fromEncodable == fromParameters)
    }

    @Test func queryAndFormContent() throws {
        let inQuery = try applied(.query(search))
        #expect(query(of: inQuery).hasPrefix("archived=0&filter%5Bratio%5D=0.5"))
        let form = try applied(.form(search, encoder: QueryEncoder(arrays: .repeatedKeys)), method: .post)
        #expect(bodyText(of: form) == "archived=0&filter%5Bratio%5D=0.5&filter%5Bstatus%5D=open&q=swift%20%26%20nio&tags=a&tags=b")
        #expect(form.headers[.contentType] == "application/x-www-form-urlencoded; charset=utf-8")
    }
}
