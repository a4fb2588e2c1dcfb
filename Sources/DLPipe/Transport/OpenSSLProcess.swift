internal import CCrypto

/// OpenSSL's process-wide set-up, done before anything else in the process uses
/// OpenSSL (libcurl, libpq, the SHA-256 hasher): only the first initialisation
/// decides it.
///
/// OpenSSL's default is to free its global state from an `atexit` handler. A
/// process exits while other threads still end: the engine's thread, whose
/// OpenSSL thread-local state is freed as it exits, raced that handler, and
/// `dlpipe get` crashed after its run was over (SIGSEGV or SIGABRT in
/// `OPENSSL_cleanup`, under `exit`; about once in 7,000 short TLS runs on a
/// loaded machine). Without the handler the kernel takes the memory back, as it
/// does every other library's.
package enum OpenSSLProcess {
    /// Set up on first use; true when OpenSSL accepted the set-up.
    package static let prepared: Bool = dl_crypto_init_without_exit_cleanup() == 1
}
