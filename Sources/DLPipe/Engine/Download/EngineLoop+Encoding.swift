internal import CCurl

/// `--compressed`: how an encoded body is asked for.
extension EngineLoop {
    /// Receive buffer of a transfer whose body curl decodes.
    static let decodedReadSize = 16 * 1024

    /// Asks for a gzip or deflate body, which libcurl decodes, in reads of
    /// 16 KiB. libcurl decodes each read whole: when our write callback
    /// pauses (a commit to wait for, a response hook deciding, the speed
    /// cap), the rest of that read's output goes to libcurl's pause buffer,
    /// which fails the transfer as "Out of memory" past 64 MiB. Deflate
    /// expands at most 1032 times, so a 16 KiB read decodes to 17 MB at most,
    /// however large the body; brotli and zstd have no such bound and are not
    /// asked for (a server that only has them sends identity).
    func askForEncodedBody(_ easy: CurlEasy) {
        easy.set(CURLOPT_ACCEPT_ENCODING, "gzip, deflate")
        easy.set(CURLOPT_BUFFERSIZE, min(pacer?.chunkSize ?? Self.decodedReadSize, Self.decodedReadSize))
    }
}
