import Crypto
import Foundation
import Testing
@testable import QueueEncryption

/// Fixed inputs and the exact bytes they seal to, in format versions 3 and 2 (what is written)
/// and version 1 (still read). Both queue stores are held to these, and `known-answers.py` in this
/// folder computes the same values from the format's specification with Python's
/// `cryptography` package, independently of this module.
@Suite struct KnownAnswerTests {
    static let key = try! QueueKey(id: KeyID("0badc0de")!, bytes: Data(0..<32))
    static let seal = EntrySeal(version: 1, keyID: KeyID("0badc0de")!, salt: Data(0xa0..<0xb0))
    static let sealV2 = EntrySeal(version: 2, keyID: KeyID("0badc0de")!, salt: Data(0xa0..<0xb0))
    static let sealV3 = EntrySeal(version: 3, keyID: KeyID("0badc0de")!, salt: Data(0xa0..<0xb0))
    static let smallBody = Data("{\"total\":12}".utf8)

    static let entryKeyV3 = "fa5256d9851fa2e3f06b18dc782427d46cd81ffe4a6d2dd022818ce198ba55b5"
    static let entryAssociatedDataV3 =
        "03000000106f1c2a4e3b5d4c7e9a8b0d1e2f3a4b5c000000086f726465722d343200000008306261646330646500000005656e747279"
    static let sealedRequestV3 =
        "a27bfed95d2f898c633c3e167b16be4cf1b11bc1ac778deedefbfcdb364d986068f4b9ad21b6b29ec39facaa64d25b23c92b0bdd74018d682fb6aa00e637f2f806"
    static let sealedBodyV3 = "38bb2111766d948021275095e62c60b40f04865cd7c0462eec2cdd2e"
    static let headers = Data("accept: application/json\nx-private: v\n".utf8)

    static let requestKeyV2 = "895e4335426192dabd6fa72dc4895f69813e25004ca569dc9faecafdd2076380"
    static let bodyKeyV2 = "5df312e5f8f66aaa124c933be9de5ec38a1893406cd60b81923210ef539e2fcc"
    static let requestAssociatedDataV2 =
        "02000000106f1c2a4e3b5d4c7e9a8b0d1e2f3a4b5c000000086f726465722d34320000000830626164633064650000000772657175657374"
    static let sealedRequestV2 =
        "1d2df7af23dfa1edd1ffa5046c99b0214f980520eca1eba8ed8a5003e9b7af6cd3fbfa6585d39cf6f3f57f83f94c748cb446a410f830dad8b571eab58a40205543236a65b245d3b476e6a5329bfcec2c82"
    static let bodyFirstChunkTagV2 = "c15f28a96feab0651d1caff37788030e"
    static let bodyFinalChunkV2 = "2d195ef08406620a649cf1c219b6b66dd97f85886c"
    static let sealedBodySHA256V2 = "c03da1ea7145a2395e2e13f50455690ae6ab62aa73df2b11891cea7dd919b953"
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
    let cipherV2 = EntryCipher(key: Self.key, seal: Self.sealV2, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey)
    let cipherV3 = EntryCipher(key: Self.key, seal: Self.sealV3, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey)

    /// The plaintext of a version 2 request: the target's length (32-bit big-endian), the
    /// target, the header lines.
    static var requestV2: Data {
        withUnsafeBytes(of: UInt32(target.count).bigEndian) { Data($0) } + target + headers
    }

    // MARK: - Version 3

    @Test func fieldKeyAndAssociatedDataV3() {
        // Version 3 derives its key as version 2 does, for the field `entry`.
        let entry = ChunkStream.deriveV2(from: Self.key.key, salt: Self.sealV3.salt, field: .entry)
        #expect(entry.withUnsafeBytes { Data($0) }.hexDigits == Self.entryKeyV3)
        let expander = ChunkStream.expander(for: Self.sealV3, key: Self.key)
        #expect(ChunkStream.expand(expander, field: .entry, seal: Self.sealV3).withUnsafeBytes { Data($0) }.hexDigits == Self.entryKeyV3)
        let associatedData = AssociatedData.encode(
            version: 3, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey, keyID: Self.sealV3.keyID, field: .entry)
        #expect(associatedData.hexDigits == Self.entryAssociatedDataV3)
    }

    /// The request and a small body sealed as one value: the seal keeps the request's
    /// ciphertext, the row's body the body's ciphertext and the tag.
    @Test func sealedEntryV3() throws {
        var blob = Data([3]) + Self.sealV3.salt
        let body = cipherV3.sealJoined(Self.requestV2 + Self.smallBody, requestSize: Self.requestV2.count, appendingTo: &blob)
        #expect(blob.prefix(17) == Data([3]) + Self.sealV3.salt)
        #expect(blob.dropFirst(17).hexDigits == Self.sealedRequestV3)
        #expect(body.hexDigits == Self.sealedBodyV3)
        let opened = try cipherV3.openJoined(request: Data(hex: Self.sealedRequestV3), body: Data(hex: Self.sealedBodyV3))
        #expect(opened.request == Self.requestV2 && opened.body == Self.smallBody)
        // Neither part opens with another's: a body moved from elsewhere, or the tag cut off.
        let otherBody = Data(hex: Self.sealedBodyV3).map { $0 ^ 1 }
        #expect(throws: SealError.self) { try cipherV3.openJoined(request: Data(hex: Self.sealedRequestV3), body: Data(otherBody)) }
        #expect(throws: SealError.self) { try cipherV3.openJoined(request: Data(hex: Self.sealedRequestV3), body: Data(hex: Self.sealedBodyV3).dropLast(16)) }
        // Nor as version 2's request.
        #expect(throws: SealError.self) { try cipherV2.openJoined(request: Data(hex: Self.sealedRequestV3), body: Data(hex: Self.sealedBodyV3)) }
    }

    // MARK: - Version 2

    @Test func fieldKeysAndAssociatedDataV2() {
        let request = ChunkStream.deriveV2(from: Self.key.key, salt: Self.sealV2.salt, field: .request)
        let body = ChunkStream.deriveV2(from: Self.key.key, salt: Self.sealV2.salt, field: .body)
        #expect(request.withUnsafeBytes { Data($0) }.hexDigits == Self.requestKeyV2)
        #expect(body.withUnsafeBytes { Data($0) }.hexDigits == Self.bodyKeyV2)
        // The key's own extract, expanded per field, gives the same keys as HKDF whole.
        let expander = ChunkStream.expander(for: Self.sealV2, key: Self.key)
        #expect(ChunkStream.expand(expander, field: .request, seal: Self.sealV2).withUnsafeBytes { Data($0) }.hexDigits == Self.requestKeyV2)
        #expect(ChunkStream.expand(expander, field: .body, seal: Self.sealV2).withUnsafeBytes { Data($0) }.hexDigits == Self.bodyKeyV2)
        let associatedData = AssociatedData.encode(
            version: 2, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey, keyID: Self.sealV2.keyID, field: .request)
        #expect(associatedData.hexDigits == Self.requestAssociatedDataV2)
    }

    @Test func sealedRequestV2() throws {
        #expect(cipherV2.seal(Self.requestV2, field: .request).hexDigits == Self.sealedRequestV2)
        #expect(try cipherV2.open(Data(hex: Self.sealedRequestV2), field: .request) == Self.requestV2)
        // Appended after other bytes, as an entry's seal holds it.
        var blob = Data([2]) + Self.sealV2.salt
        cipherV2.seal(Self.requestV2, field: .request, appendingTo: &blob)
        #expect(blob.dropFirst(17).hexDigits == Self.sealedRequestV2)
    }

    @Test func sealedTwoChunkBodyV2() throws {
        var sealer = cipherV2.bodySealer()
        var sealed = Data()
        for piece in pieces(Self.body, size: 1000) { sealed.append(sealer.update(piece)) }
        sealed.append(sealer.finish())
        #expect(sealed.subdata(in: SealFormat.chunkSize..<SealFormat.sealedChunkSize).hexDigits == Self.bodyFirstChunkTagV2)
        #expect(sealed.suffix(from: SealFormat.sealedChunkSize).hexDigits == Self.bodyFinalChunkV2)
        #expect(Data(SHA256.hash(data: sealed)).hexDigits == Self.sealedBodySHA256V2)
        #expect(cipherV2.seal(Self.body, field: .body) == sealed)
        #expect(try cipherV2.open(sealed, field: .body) == Self.body)
    }

    /// New entries are sealed in version 2 or 3, and a keyring opens all three versions.
    @Test func writesVersions2And3AndReadsAll() throws {
        let keyring = try Keyring(primary: Self.key)
        let fresh = EntryCipher(sealingWith: keyring, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey)
        #expect(fresh.entrySeal.version == 2 && fresh.entrySeal.salt.count == 16)
        let joined = EntryCipher(sealingWith: keyring, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey, version: 3)
        #expect(joined.entrySeal.version == 3 && joined.entrySeal.salt != fresh.entrySeal.salt)
        let v3 = try EntryCipher(opening: Self.sealV3, with: keyring, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey)
        #expect(try v3.openJoined(request: Data(hex: Self.sealedRequestV3), body: Data(hex: Self.sealedBodyV3)).body == Self.smallBody)
        let v1 = try EntryCipher(opening: Self.seal, with: keyring, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey)
        #expect(try v1.open(Data(hex: Self.sealedTarget), field: .target) == Self.target)
        let v2 = try EntryCipher(opening: Self.sealV2, with: keyring, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey)
        #expect(try v2.open(Data(hex: Self.sealedRequestV2), field: .request) == Self.requestV2)
        // A value of one version does not open as the other: the key and data differ.
        #expect(throws: SealError.self) { try v1.open(Data(hex: Self.sealedRequestV2), field: .request) }
        let v4 = EntrySeal(version: 4, keyID: Self.sealV2.keyID, salt: Self.sealV2.salt)
        #expect(throws: SealError.self) { try EntryCipher(opening: v4, with: keyring, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey) }
    }

    // MARK: - Version 1

    @Test func keyCheck() {
        #expect(Self.key.keyCheckValue == Self.keyCheckValue)
    }

    @Test func fieldKeysAndAssociatedData() {
        let target = ChunkStream.derive(from: Self.key.key, salt: Self.seal.salt, field: .target)
        let body = ChunkStream.derive(from: Self.key.key, salt: Self.seal.salt, field: .body)
        #expect(target.withUnsafeBytes { Data($0) }.hexDigits == Self.targetKey)
        #expect(body.withUnsafeBytes { Data($0) }.hexDigits == Self.bodyKey)
        let associatedData = AssociatedData.encode(
            version: 1, queueID: Self.queueID, idempotencyKey: Self.idempotencyKey, keyID: Self.seal.keyID, field: .target)
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
