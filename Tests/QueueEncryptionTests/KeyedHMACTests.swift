import Crypto
import Foundation
import Testing
@testable import QueueEncryption

/// ``KeyedHMAC`` (HMAC-SHA256 from `SHA256`'s padded states) against swift-crypto's own
/// `HMAC<SHA256>`, and against RFC 4231's published vectors: keys shorter than, equal to and
/// longer than SHA-256's 64-byte block, and messages around its padding boundaries.
@Suite struct KeyedHMACTests {
    @Test(arguments: [0, 1, 31, 32, 63, 64, 65, 131])
    func sameAsSwiftCrypto(keySize: Int) {
        var generator = SystemRandomNumberGenerator()
        let key = SymmetricKey(data: (0..<keySize).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let keyed = KeyedHMAC(key: key)
        for size in [0, 1, 32, 55, 56, 63, 64, 65, 119, 120, 200, 1_000] {
            let message = Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let ours = message.withUnsafeBytes { keyed.key(for: $0) }.withUnsafeBytes { Data($0) }
            let theirs = Data(HMAC<SHA256>.authenticationCode(for: message, using: key))
            #expect(ours == theirs, "key of \(keySize) bytes, message of \(size)")
        }
    }

    /// RFC 4231, test cases 1, 2 and 6 (a 131-byte key, hashed first).
    @Test func rfc4231() {
        let cases: [(key: Data, message: Data, mac: String)] = [
            (Data(repeating: 0x0b, count: 20), Data("Hi There".utf8),
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Data("Jefe".utf8), Data("what do ya want for nothing?".utf8),
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            (Data(repeating: 0xaa, count: 131), Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ]
        for (key, message, mac) in cases {
            let ours = message.withUnsafeBytes { KeyedHMAC(key: SymmetricKey(data: key)).key(for: $0) }
            #expect(ours.withUnsafeBytes { Data($0) }.hexDigits == mac)
        }
    }
}
