import Foundation
import HTTPCore
import HTTPTypes
import Multipart
import MultipartKit
import NIOCore
import PropertyBased
import Testing

/// A part as an independent parser (vapor/multipart-kit) read it.
struct ParsedPart: Equatable {
    var headers: [String: String] = [:]
    var body: [UInt8] = []
}

/// Parses `body` with multipart-kit, feeding it in pieces of `piece` bytes.
func parse(_ body: Data, boundary: String, piece: Int = 4096) throws -> [ParsedPart] {
    let parser = MultipartParser(boundary: boundary)
    var parts: [ParsedPart] = []
    var current = ParsedPart()
    parser.onHeader = { name, value in current.headers[name.lowercased()] = value }
    parser.onBody = { buffer in current.body += buffer.readBytes(length: buffer.readableBytes) ?? [] }
    parser.onPartComplete = {
        parts.append(current)
        current = ParsedPart()
    }
    let bytes = [UInt8](body)
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + piece)
        try parser.execute(Array(bytes[offset..<end]))
        offset = end
    }
    return parts
}

@Suite struct MultipartRoundTripTests {
    @Test func fieldsFilesAndStreamsSurviveAnIndependentParser() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("data.csv")
        let csv = Data("a,b\n1,2\n".utf8)
        try csv.write(to: file)
        let binary = Data((0..<100_000).map { UInt8($0 % 256) })

        var form = MultipartForm()
        form.append("Ada Lovelace", name: "author")
        try form.append(file: file, name: "table")
        form.append(data: binary, name: "blob", fileName: "blob.bin", headers: [HTTPField.Name("X-Part")!: "7"])
        form.append(stream: { ByteStream(data: Data("streamed".utf8)) }, length: 8, name: "live")

        let body = try await collect(draft(.multipart(form, chunkSize: 1000)).body)
        #expect(body.count == form.contentLength)
        let parts = try parse(body, boundary: form.boundary, piece: 333)
        #expect(parts.count == 4)
        #expect(parts[0].headers["content-disposition"] == #"form-data; name="author""#)
        #expect(parts[0].body == Array("Ada Lovelace".utf8))
        #expect(parts[1].headers["content-disposition"] == #"form-data; name="table"; filename="data.csv""#)
        #expect(parts[1].headers["content-type"] == "text/csv")
        #expect(parts[1].body == Array(csv))
        #expect(parts[2].headers["x-part"] == "7")
        #expect(parts[2].body == Array(binary))
        #expect(parts[3].body == Array("streamed".utf8))
    }

    @Test func randomFormsRoundTrip() async {
        let names = Gen.letterOrNumber.string(of: 1...12).array(of: 1...6)
        let bodies = Gen<UInt8>.value(in: 0...255).array(of: 0...400).array(of: 6)
        let chunkSizes = Gen.int(in: 1...5000)
        await propertyCheck(count: 200, input: names, bodies, chunkSizes) { names, bodies, chunkSize in
            var form = MultipartForm()
            for (index, name) in names.enumerated() {
                let fileName = index.isMultiple(of: 2) ? "\(name) \(index).bin" : nil
                form.append(data: Data(bodies[index]), name: name, fileName: fileName)
            }
            do {
                let body = try await collect(draft(.multipart(form, chunkSize: chunkSize)).body)
                #expect(body.count == form.contentLength)
                let parts = try parse(body, boundary: form.boundary, piece: max(1, chunkSize / 3))
                #expect(parts.count == names.count)
                for (index, part) in parts.enumerated() where index < names.count {
                    #expect(part.body == bodies[index])
                    #expect(part.headers["content-disposition"]?.hasPrefix("form-data; name=\"\(names[index])\"") == true)
                }
            } catch {
                Issue.record("round trip failed: \(error)")
            }
        }
    }
}
