import Foundation
import HTTPCore
import Testing

@Suite("RandomUUID: version 4 UUIDs as lowercase text, without Foundation's /dev/urandom reads")
struct RandomUUIDTests {
    @Test("36 characters in 8-4-4-4-12 groups, version 4, variant 10, lowercase hex; Foundation reads it back; 10,000 are distinct")
    func format() throws {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let text = RandomUUID.lowercased()
            let characters = Array(text)
            #expect(characters.count == 36)
            for (index, character) in characters.enumerated() {
                if [8, 13, 18, 23].contains(index) {
                    #expect(character == "-", "\(text)")
                } else {
                    #expect("0123456789abcdef".contains(character), "\(text)")
                }
            }
            #expect(characters[14] == "4", "version 4: \(text)")
            #expect("89ab".contains(characters[19]), "variant 10: \(text)")
            let parsed = try #require(UUID(uuidString: text))
            #expect(parsed.uuidString.lowercased() == text)
            seen.insert(text)
        }
        #expect(seen.count == 10_000)
    }
}
