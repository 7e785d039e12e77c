#if Brotli
import CBrotli
import Foundation
import HTTPCore

/// A `Content-Encoding: br` body decoded as it arrives, through Debian's libbrotli (the package
/// trait `Brotli`): AsyncHTTPClient decodes gzip and deflate itself, and this does for `br` what
/// it does for them, with the same limit (``DecodingLimit``, from the configuration's
/// `decompression`). A body that expands past it, is not valid brotli, ends before its stream
/// does, or goes on after it, fails as `.invalidResponse`.
///
/// `@unchecked Sendable` is sound: a `ByteStream` has one consumer at a time, so the decoder's
/// state and the pending input are used by one task at a time.
final class BrotliBodyReader: ByteChunkSource, @unchecked Sendable {
    private let upstream: ResponseBodyReader
    private let decoder: OpaquePointer
    private let limit: DecodingLimit
    /// The encoded chunk being decoded and how much of it is left.
    private var input = Data()
    private var consumed = 0
    private var encodedBytes = 0
    private var decodedBytes = 0
    /// The decoder has output it could not hand over yet.
    private var hasMoreOutput = false
    private var finished = false
    /// The most decoded bytes handed over at once.
    static let chunkSize = 64 * 1024

    init(_ upstream: ResponseBodyReader, limit: DecodingLimit) throws {
        guard let decoder = BrotliDecoderCreateInstance(nil, nil, nil) else {
            throw NetworkError.transport(TransportFailure(.other, "the brotli decoder could not be created"))
        }
        self.upstream = upstream
        self.decoder = decoder
        self.limit = limit
    }

    deinit {
        BrotliDecoderDestroyInstance(decoder)
    }

    func next() async throws -> Data? {
        while !finished {
            if hasMoreOutput || consumed < input.count {
                if let output = try decodeStep(), !output.isEmpty { return output }
                continue
            }
            guard let chunk = try await upstream.next() else {
                // An empty body (a HEAD, a 204) has nothing to decode.
                if encodedBytes == 0 { return nil }
                throw Self.failure("the br body ended before its brotli stream did")
            }
            input = chunk
            consumed = 0
        }
        // The stream ended: anything after it is not part of the body.
        while let extra = try await upstream.next() {
            if !extra.isEmpty { throw Self.failure("the br body goes on after its brotli stream ended") }
        }
        return nil
    }

    /// Decodes what it can of the pending input into at most ``chunkSize`` bytes.
    private func decodeStep() throws -> Data? {
        var output = Data(count: Self.chunkSize)
        let (result, used, produced) = input.withUnsafeBytes { inputBytes -> (BrotliDecoderResult, Int, Int) in
            output.withUnsafeMutableBytes { outputBytes -> (BrotliDecoderResult, Int, Int) in
                let base = inputBytes.bindMemory(to: UInt8.self).baseAddress.map { $0 + consumed }
                var availableIn = inputBytes.count - consumed
                var nextIn: UnsafePointer<UInt8>? = base.map { UnsafePointer($0) }
                var availableOut = outputBytes.count
                var nextOut = outputBytes.bindMemory(to: UInt8.self).baseAddress
                let before = availableIn
                let result = BrotliDecoderDecompressStream(decoder, &availableIn, &nextIn, &availableOut, &nextOut, nil)
                return (result, before - availableIn, outputBytes.count - availableOut)
            }
        }
        consumed += used
        encodedBytes += used
        decodedBytes += produced
        if limit.isExceeded(encoded: encodedBytes, decoded: decodedBytes) {
            throw Self.failure("the br body expands past the decompression limit (\(decodedBytes) bytes from \(encodedBytes))")
        }
        switch result {
        case BROTLI_DECODER_RESULT_SUCCESS:
            finished = true
            hasMoreOutput = false
            if consumed < input.count { throw Self.failure("the br body goes on after its brotli stream ended") }
        case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
            hasMoreOutput = true
        case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
            hasMoreOutput = false
        default:
            let reason = String(cString: BrotliDecoderErrorString(BrotliDecoderGetErrorCode(decoder)))
            throw Self.failure("the br body is not valid brotli (\(reason))")
        }
        output.count = produced
        return output
    }

    private static func failure(_ reason: String) -> NetworkError {
        NetworkError.transport(TransportFailure(.invalidResponse, reason))
    }
}
#endif
