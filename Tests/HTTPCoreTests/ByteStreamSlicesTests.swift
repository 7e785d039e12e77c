import Foundation
import HTTPCore
import Testing

@Suite("ByteStream(data:chunkSize:): a body in memory in slices")
struct ByteStreamSlicesTests {
    @Test("slices of the chunk size, the last one shorter, the same bytes; each iteration starts over")
    func slices() async throws {
        let data = Data((0..<10_001).map { UInt8(truncatingIfNeeded: $0 &* 3) }).dropFirst(1)   // a slice: indices from 1
        let stream = ByteStream(data: data, chunkSize: 4096)
        for _ in 0..<2 {
            var sizes: [Int] = []
            var joined = Data()
            for try await chunk in stream {
                sizes.append(chunk.count)
                joined.append(chunk)
            }
            #expect(sizes == [4096, 4096, 1808])
            #expect(joined == data)
        }
    }

    @Test("nothing for empty data; one slice when the data is shorter than a chunk; a chunk size under 1 counts as 1")
    func edges() async throws {
        var count = 0
        for try await _ in ByteStream(data: Data(), chunkSize: 10) { count += 1 }
        #expect(count == 0)
        #expect(try await ByteStream(data: Data([1, 2, 3]), chunkSize: 10).collect(upTo: 100) == Data([1, 2, 3]))
        var ones: [Int] = []
        for try await chunk in ByteStream(data: Data([1, 2, 3]), chunkSize: 0) { ones.append(chunk.count) }
        #expect(ones == [1, 1, 1])
    }
}
