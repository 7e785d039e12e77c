import Foundation
import Testing
@testable import QueueEncryption

@Suite struct KeyringTextTests {
    static let keyA = Data(repeating: 0xaa, count: 32).base64EncodedString()
    static let keyB = Data(repeating: 0xbb, count: 32).base64EncodedString()

    func parse(_ text: String) throws(SealError) -> Keyring {
        try Keyring(parsing: text, source: "test.keyring")
    }

    @Test func parsesCommentsBlankLinesAndSpacing() throws {
        let keyring = try parse(
            """
            courier-keyring v1
            # rotated in spring

            0000000a \(Self.keyA)
            \t0000000b\t \(Self.keyB)   primary\r

            """)
        #expect(keyring.keys.map(\.id.rawValue) == ["0000000a", "0000000b"])
        #expect(keyring.primary.id.rawValue == "0000000b")
        #expect(keyring[KeyID("0000000a")!] != nil)
    }

    @Test func writtenTextReadsBack() throws {
        var keyring = Keyring.generate()
        keyring.addPrimary()
        let again = try parse(keyring.fileText())
        #expect(again.keys.map(\.id) == keyring.keys.map(\.id))
        #expect(again.keys.map(\.keyCheckValue) == keyring.keys.map(\.keyCheckValue))
        #expect(again.primary.id == keyring.primary.id)
    }

    static let malformed: [(text: String, line: Int?, reason: String)] = [
        ("", 1, "not a Courier keyring"),
        ("# courier-keyring v1\n0000000a \(keyA) primary\n", 1, "not a Courier keyring"),
        ("courier-keyring v2\n0000000a \(keyA) primary\n", 1, "format v2 is not supported"),
        ("courier-keyring v1\n", nil, "holds no keys"),
        ("courier-keyring v1\n0000000a \(keyA)\n", nil, "no key is marked primary"),
        ("courier-keyring v1\n0000000a \(keyA) primary\n0000000b \(keyB) primary\n", 3, "second key is marked primary (the first is on line 2)"),
        ("courier-keyring v1\n0000000a \(keyA) primary\n0000000a \(keyB)\n", 3, "key id 0000000a is also on line 2"),
        ("courier-keyring v1\n0000000A \(keyA) primary\n", 2, "8 lowercase hexadecimal digits"),
        ("courier-keyring v1\n000a \(keyA) primary\n", 2, "8 lowercase hexadecimal digits"),
        ("courier-keyring v1\n0000000a not*base64 primary\n", 2, "is not valid base64"),
        ("courier-keyring v1\n0000000a \(Data(count: 16).base64EncodedString()) primary\n", 2, "has 16 bytes, not 32"),
        ("courier-keyring v1\n0000000a \(keyA) primary extra\n", 2, "not 4 fields"),
        ("courier-keyring v1\n0000000a\n", 2, "not 1 fields"),
        ("courier-keyring v1\n0000000a \(keyA) secondary\n", 2, "only `primary` may follow"),
    ]

    @Test(arguments: malformed)
    func refusesMalformedText(text: String, line: Int?, reason: String) {
        let error = sealError { _ = try parse(text) }
        #expect(error?.kind == .malformedKeyring)
        #expect(error?.line == line)
        #expect(error?.path == "test.keyring")
        #expect(error?.reason?.contains(reason) == true, "\(error?.reason ?? "no error")")
        #expect(error?.description.contains(Self.keyA) == false)
    }

    /// A key line with its fields swapped would echo the key if a message quoted the id field.
    @Test func messagesNeverQuoteFields() {
        let error = sealError { _ = try parse("courier-keyring v1\n\(Self.keyA) 0000000a primary\n") }
        #expect(error?.kind == .malformedKeyring)
        #expect(error?.description.contains(Self.keyA) == false)
        #expect(error?.description.contains(String(Self.keyA.prefix(8))) == false)
    }

    @Test func duplicateIDsInCode() {
        let key = QueueKey.generate()
        #expect(sealError { _ = try Keyring(primary: key, decryptOnly: [key]) }?.kind == .malformedKeyring)
        #expect(sealError { _ = try QueueKey(id: KeyID("0000000a")!, bytes: Data(count: 31)) }?.kind == .invalidSeal)
    }

    @Test func descriptionsShowIDsNeverKeyBytes() throws {
        var keyring = Keyring.generate()
        keyring.addPrimary()
        let shown = [keyring.description, keyring.debugDescription, String(describing: keyring), String(reflecting: keyring)]
            + keyring.keys.flatMap { [$0.description, $0.debugDescription, String(reflecting: $0), "\($0)"] }
        for text in shown {
            for key in keyring.keys {
                #expect(!text.contains(key.base64), "\(text)")
            }
        }
        #expect(keyring.description.contains(keyring.primary.id.rawValue))
        #expect(keyring.primary.description.contains(keyring.primary.keyCheckValue))
    }

    @Test func addPrimaryKeepsTheOldKeyForOpening() throws {
        var keyring = Keyring.generate()
        let old = keyring.primary
        let queue = UUID()
        let sealed = EntryCipher(sealingWith: keyring, queueID: queue, idempotencyKey: "e")
        let body = sealed.seal(Data("old".utf8), field: .body)
        let new = keyring.addPrimary()
        #expect(keyring.primary.id == new.id && new.id != old.id)
        #expect(keyring.keys.count == 2)
        #expect(EntryCipher(sealingWith: keyring, queueID: queue, idempotencyKey: "f").entrySeal.keyID == new.id)
        let opener = try EntryCipher(opening: sealed.entrySeal, with: keyring, queueID: queue, idempotencyKey: "e")
        #expect(try opener.open(body, field: .body) == Data("old".utf8))
    }

    @Test func keyIDs() {
        #expect(KeyID("0badc0de") != nil)
        for bad in ["", "0badc0d", "0badc0de0", "0BADC0DE", "0badc0dg", "0badc0d "] {
            #expect(KeyID(bad) == nil, "\(bad)")
        }
        let ids = Set((0..<100).map { _ in QueueKey.generate().id })
        #expect(ids.count == 100)
    }
}
