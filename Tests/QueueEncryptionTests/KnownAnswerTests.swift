import Crypto
import Foundation
import Testing
@testable import QueueEncryption

/// Fixed inputs and the exact bytes they seal to. Both queue stores are held to these, and
/// `known-answers.py` in this folder computes the same values from the format's specification
/// with Python's `cryptography` package, independently of this module.
@Suite struct KnownAnswerTests {
    static let key = try! QueueKey(id: KeyID("0badc0de")!, bytes: Data(0..<32))
    static let seal = EntrySeal(version: 1, keyID: KeyID("0badc0de")!, salt: Data(0xa0..<0xb0))
    static let queueID = UUID(uuidString: "6f1c2a4e-3b5d-4c7e-9a8b-0d1e2f3a4b5c")!
    static let idempotencyKey = "order-42"
    static let target = Data("/orders?id=42&name=Zoë".utf8)
    static let body = Data((0..<(SealFormat.chunkSize + 5)).map { UInt8($0 % 251) })

    static let keyCheckValue = "aa6ccb9d33cb0682e100772726c052f3"
    static let targetKey = "00ebf0b55896b30eaf4b8d4e4b8b71df0a17feceb80453b11bc1acf7c9adcb76"
    static let bodyKey = "91cc45e6ecebd587ad64efc2e34f0514cec41d7a11a392c7cc54b47cb4d72a11"
    static let targetAssociatedData =
        "01000000106f1c2a4e3b5d4c7e9a8b0d1e2f3a4b5c000000086f726465722d343200000008306261646330646500000006746172676574"
    static let sealedTarget = "93f8b81d96e26e813ea55e550a3d861bc5dad80e548f895c097ae555763364cd15a83a07989b74"
    static let sealedEmptyHeaders = "d792c66a8949af2d5ba9102e1c612aed"
    static let bodyFirstChunkTag = "99c37e2cc0b7c437dfddbe940cfb361a"
    static let bodyFinalChunk = "a79806ca07a0e6048ddc079d43d109a184dc7886aa"
    static let sealedBodySHA256 = "a809c8e981916820b359ac08635f5fea8b3d10064a73164ff3a470be2889c8cd"

    let cipher = EntryCipher(key: Self.key, seal: Self.seal, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey)

    @Test func keyCheck() {
        #expect(Self.key.keyCheckValue == Self.keyCheckValue)
    }

    @Test func fieldKeysAndAssociatedData() {
        let target = ChunkStream.derive(from: Self.key.key, salt: Self.seal.salt, field: .target)
        let body = ChunkStream.derive(from: Self.key.key, salt: Self.seal.salt, field: .body)
        #expect(target.withUnsafeBytes { Data($0) }.hexDigits == Self.targetKey)
        #expect(body.withUnsafeBytes { Data($0) }.hexDigits == Self.bodyKey)
        let associatedData = AssociatedData.encode(
            queueID: Self.queueID, idempotencyKey: Self.idempotencyKey, keyID: Self.seal.keyID, field: .target)
        #expect(associatedData.hexDigits == Self.targetAssociatedData)
    }

    @Test func sealedFields() throws {
        #expect(cipher.seal(Self.target, field: .target).hexDigits == Self.sealedTarget)
        #expect(cipher.seal(Data(), field: .headers).hexDigits == Self.sealedEmptyHeaders)
        #expect(try cipher.open(Data(hex: Self.sealedTarget), field: .target) == Self.target)
    }

    @Test func sealedTwoChunkBody() throws {
        var sealer = cipher.bodySealer()
        var sealed = Data()
        for piece in pieces(Self.body, size: 1000) { sealed.append(sealer.update(piece)) }
        sealed.append(sealer.finish())
        #expect(sealed.count == SealFormat.sealedSize(plaintextSize: Self.body.count))
        #expect(sealed.subdata(in: SealFormat.chunkSize..<SealFormat.sealedChunkSize).hexDigits == Self.bodyFirstChunkTag)
        #expect(sealed.suffix(from: SealFormat.sealedChunkSize).hexDigits == Self.bodyFinalChunk)
        #expect(Data(SHA256.hash(data: sealed)).hexDigits == Self.sealedBodySHA256)
        #expect(cipher.seal(Self.body, field: .body) == sealed)
        #expect(try cipher.open(sealed, field: .body) == Self.body)
    }

    /// The same bytes open through the public API, as a store reading them back would.
    @Test func opensThroughThePublicAPI() throws {
        let keyring = try Keyring(primary: .generate(), decryptOnly: [Self.key])
        let opener = try EntryCipher(opening: Self.seal, with: keyring, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey)
        #expect(try opener.open(Data(hex: Self.sealedTarget), field: .target) == Self.target)
    }
}

extension Data {
    init(hex: String) {
        let digits = Array(hex.utf8)
        self.init((0..<digits.count / 2).map { UInt8(String(decoding: digits[2 * $0...2 * $0 + 1], as: UTF8.self), radix: 16)! })
    }
}
