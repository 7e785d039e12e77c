import Crypto
import Foundation
import Testing
@testable import QueueEncryption

/// ``FieldAEAD`` (AES-256-GCM on caller-owned buffers, through the BoringSSL swift-crypto
/// links) against swift-crypto's own `AES.GCM`, and against the GCM specification's
/// AES-256 test case 16: the same bytes out, and nothing of the plaintext when a sealed value
/// does not authenticate.
@Suite struct FieldAEADTests {
    private static func random(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    private static func seal(_ aead: FieldAEAD, _ plaintext: Data, nonce: Data, associatedData: Data) -> Data {
        var sealed = Data(count: plaintext.count + SealFormat.tagSize)
        sealed.withUnsafeMutableBytes { output in
            plaintext.withUnsafeBytes { plaintext in
                nonce.withUnsafeBytes { nonce in
                    associatedData.withUnsafeBytes { aead.seal(plaintext, nonce: nonce, associatedData: $0, into: output) }
                }
            }
        }
        return sealed
    }

    /// The plaintext, or `nil` with what the output buffer held after a failure.
    private static func open(_ aead: FieldAEAD, _ sealed: Data, nonce: Data, associatedData: Data) -> (plaintext: Data?, buffer: Data) {
        var plaintext = Data(repeating: 0xee, count: sealed.count - SealFormat.tagSize)
        let opened = plaintext.withUnsafeMutableBytes { output in
            sealed.withUnsafeBytes { sealed in
                nonce.withUnsafeBytes { nonce in
                    associatedData.withUnsafeBytes { aead.open(sealed, nonce: nonce, associatedData: $0, into: output) }
                }
            }
        }
        return (opened ? plaintext : nil, plaintext)
    }

    @Test(arguments: [0, 1, 15, 16, 17, 1_000, 65_535, 65_536])
    func sameAsSwiftCrypto(size: Int) throws {
        let key = Self.random(32), nonce = Self.random(12), associatedData = Self.random(70), plaintext = Self.random(size)
        let aead = key.withUnsafeBytes { FieldAEAD(key: $0) }
        let ours = Self.seal(aead, plaintext, nonce: nonce, associatedData: associatedData)
        let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: key), nonce: AES.GCM.Nonce(data: nonce), authenticating: associatedData)
        #expect(ours == box.ciphertext + box.tag)
        #expect(Self.open(aead, ours, nonce: nonce, associatedData: associatedData).plaintext == plaintext)
    }

    @Test func specificationTestCase16() {
        let key = Data(hex: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = Data(hex: "cafebabefacedbaddecaf888")
        let plaintext = Data(hex: "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let associatedData = Data(hex: "feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let sealed = Self.seal(key.withUnsafeBytes { FieldAEAD(key: $0) }, plaintext, nonce: nonce, associatedData: associatedData)
        #expect(sealed.hexDigits == "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
            + "76fc6ece0f4e1768cddf8853bb2d551b")
    }

    /// A flipped byte (ciphertext or tag), another nonce or other associated data: `false`,
    /// and the output holds none of the plaintext (BoringSSL clears it).
    @Test func failuresOpenNothing() {
        let key = Self.random(32), nonce = Self.random(12), associatedData = Self.random(40), plaintext = Self.random(300)
        let aead = key.withUnsafeBytes { FieldAEAD(key: $0) }
        let sealed = Self.seal(aead, plaintext, nonce: nonce, associatedData: associatedData)
        var flipped = [sealed, sealed]
        flipped[0][5] ^= 1
        flipped[1][sealed.count - 1] ^= 0x80
        var otherNonce = nonce
        otherNonce[11] ^= 1
        let cases = flipped.map { ($0, nonce, associatedData) } + [(sealed, otherNonce, associatedData), (sealed, nonce, associatedData.dropLast())]
        for (value, nonce, associatedData) in cases {
            let (opened, buffer) = Self.open(aead, value, nonce: nonce, associatedData: Data(associatedData))
            #expect(opened == nil)
            #expect(buffer.allSatisfy { $0 == 0 }, "the output keeps nothing of an unauthenticated value")
        }
        // A value of the tag alone (an empty plaintext) opens to nothing, and fails when changed.
        let empty = Self.seal(aead, Data(), nonce: nonce, associatedData: associatedData)
        #expect(empty.count == SealFormat.tagSize)
        #expect(Self.open(aead, empty, nonce: nonce, associatedData: associatedData).plaintext == Data())
        var changed = empty
        changed[0] ^= 1
        #expect(Self.open(aead, changed, nonce: nonce, associatedData: associatedData).plaintext == nil)
    }
}
