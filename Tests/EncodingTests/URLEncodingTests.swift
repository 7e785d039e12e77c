import Encoding
import Foundation
import HTTPCore
import HTTPTypes
import Testing

@Suite struct URLEncodingTests {
    @Test(arguments: [
        (QueryFormat.ArrayStyle.brackets, "a%5B%5D=1&a%5B%5D=2&a%5B%5D=x%20y"),
        (.repeatedKeys, "a=1&a=2&a=x%20y"),
        (.commaSeparated, "a=1,2,x%20y"),
        (.indexed, "a%5B0%5D=1&a%5B1%5D=2&a%5B2%5D=x%20y"),
    ])
    func arrayStyles(style: QueryFormat.ArrayStyle, expected: String) throws {
        let encoding = URLEncoding(destination: .queryString, format: QueryFormat(arrays: style))
        #expect(try encoding.percentEncodedQuery(["a": [1, 2, "x y"]]) == expected)
    }

    @Test func commaStyleFallsBackToIndexedForNestedContainers() throws {
        let encoding = URLEncoding(format: QueryFormat(arrays: .commaSeparated))
        #expect(try encoding.percentEncodedQuery(["a": [["b": 1]]]) == "a%5B0%5D%5Bb%5D=1")
    }

    @Test func boolStyles() throws {
        #expect(try URLEncoding(format: QueryFormat(bools: .numeric)).percentEncodedQuery(["on": true, "off": false]) == "off=0&on=1")
        #expect(try URLEncoding(format: QueryFormat(bools: .literal)).percentEncodedQuery(["on": true, "off": false]) == "off=false&on=true")
    }

    @Test func nestedDictionariesUseBracketedKeys() throws {
        let parameters: [String: Any] = ["user": ["name": "Ada", "address": ["city": "Paris"]], "page": 2]
        let decoded = try URLEncoding.default.percentEncodedQuery(parameters).removingPercentEncoding
        #expect(decoded == "page=2&user[address][city]=Paris&user[name]=Ada")
    }

    @Test func keysAreSortedForDeterminism() throws {
        let parameters: [String: Any] = ["zeta": 1, "alpha": 2, "mid": 3, "Beta": 4]
        #expect(try URLEncoding.default.percentEncodedQuery(parameters) == "Beta=4&alpha=2&mid=3&zeta=1")
    }

    @Test func reservedCharactersArePercentEncodedPerRFC3986() throws {
        let value = "+ & = / ? # space é 😀"
        let encoded = try URLEncoding.default.percentEncodedQuery(["k&=?": value])
        #expect(encoded == "k%26%3D%3F=%2B%20%26%20%3D%20%2F%20%3F%20%23%20space%20%C3%A9%20%F0%9F%98%80")
        let unreserved = try URLEncoding.default.percentEncodedQuery(["k": "AZaz09-._~"])
        #expect(unreserved == "k=AZaz09-._~")
    }

    @Test func nilAndNullAreLeftOut() throws {
        let missing: String? = nil
        let parameters: [String: Any] = ["a": missing as Any, "b": NSNull(), "c": Optional("x") as Any, "d": [] as [Int]]
        #expect(try URLEncoding.default.percentEncodedQuery(parameters) == "c=x")
    }

    @Test func scalarsOfEveryKind() throws {
        let parameters: [String: Any] = [
            "int8": Int8(-3), "uint64": UInt64.max, "double": 1.5, "float": Float(0.25),
            "decimal": Decimal(string: "12.34")!, "url": URL(string: "https://x.test/a?b=c")!,
            "uuid": UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
            "date": Date(timeIntervalSince1970: 1_700_000_000), "data": Data([1, 2, 3]),
        ]
        let decoded = try URLEncoding.default.percentEncodedQuery(parameters).removingPercentEncoding
        #expect(decoded == "data=AQID&date=2023-11-14T22:13:20Z&decimal=12.34&double=1.5&float=0.25&int8=-3&uint64=18446744073709551615&url=https://x.test/a?b=c&uuid=E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
    }

    @Test func numbersFromJSONSerializationKeepBooleansApart() throws {
        let object = try JSONSerialization.jsonObject(with: Data(#"{"flag":true,"count":1,"ratio":1.5,"user":{"on":false,"ids":[1,2]},"none":null}"#.utf8))
        let parameters = try #require(object as? [String: Any])
        let query = try URLEncoding(format: QueryFormat(bools: .literal)).percentEncodedQuery(parameters)
        #expect(query.removingPercentEncoding == "count=1&flag=true&ratio=1.5&user[ids][]=1&user[ids][]=2&user[on]=false")
        let json = try JSONEncoding.default.data(for: parameters)
        #expect(String(decoding: json, as: UTF8.self) == #"{"count":1,"flag":true,"none":null,"ratio":1.5,"user":{"ids":[1,2],"on":false}}"#)
    }

    @Test func methodDependentDestination() throws {
        let content = RequestContent.parameters(["q": "a b"], encoding: URLEncoding.default)
        for method in [HTTPRequest.Method.get, .head, .delete] {
            let draft = try applied(content, method: method)
            #expect(query(of: draft) == "q=a%20b")
            #expect(draft.body == nil)
        }
        let post = try applied(content, method: .post)
        #expect(post.percentEncodedQueryItems.isEmpty)
        #expect(bodyText(of: post) == "q=a%20b")
        #expect(post.headers[.contentType] == "application/x-www-form-urlencoded; charset=utf-8")
    }

    @Test func fixedDestinations() throws {
        let inQuery = try applied(.parameters(["q": 1], encoding: URLEncoding.queryString), method: .post)
        #expect(query(of: inQuery) == "q=1")
        #expect(inQuery.body == nil)
        let inBody = try applied(.parameters(["q": 1], encoding: URLEncoding.httpBody), method: .get)
        #expect(bodyText(of: inBody) == "q=1")
    }

    @Test func unsupportedValueNamesItsKeyPath() {
        let failure = encodingFailure { _ = try URLEncoding.default.encode(["user": ["tags": ["ok", Opaque()]]]) }
        #expect(failure?.keyPath == ["user", "tags", "1"])
        #expect(failure?.description.hasPrefix("user.tags.1: cannot encode a value of type Opaque") == true)
    }

    @Test func nonFiniteNumberNamesItsKeyPath() {
        #expect(encodingFailure { _ = try URLEncoding.default.encode(["a": ["b": Double.nan]]) }?.keyPath == ["a", "b"])
        #expect(encodingFailure { _ = try URLEncoding.default.encode(["f": Float.infinity]) }?.keyPath == ["f"])
    }

    @Test func errorIsKeptUntilTheRequestIsBuilt() {
        let content = RequestContent.parameters(["bad": Opaque()], encoding: URLEncoding.default)
        #expect(encodingFailure { _ = try applied(content) }?.keyPath == ["bad"])
    }

    @Test func printableQueryParameters() throws {
        struct Token: CustomStringConvertible, Sendable { var description: String { "tok/1" } }
        let draft = try applied(.query(["page": 2, "sort": "name", "desc": true, "token": Token(), "ids": [3, 4]], format: QueryFormat(arrays: .commaSeparated, bools: .literal)))
        #expect(query(of: draft) == "desc=true&ids=3,4&page=2&sort=name&token=tok%2F1")
    }
}

@Suite struct QueryOverloadTests {
    @Test func homogeneousDictionaryLiteralIsNotAmbiguous() throws {
        #expect(query(of: try applied(.query(["page": 2, "size": 10]))) == "page=2&size=10")
        #expect(query(of: try applied(.query(["q": "a b"]))) == "q=a%20b")
    }
}
