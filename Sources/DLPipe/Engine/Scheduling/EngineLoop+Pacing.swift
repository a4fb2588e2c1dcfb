/// The speed cap's side of the loop: transfers the pacer paused go on, in
/// order, once its bucket has tokens again.
extension EngineLoop {
    /// Unpauses transfers waiting for the speed cap while tokens last. Runs in
    /// the loop, outside curl's callbacks: an unpause may deliver the chunk
    /// curl kept at once, through the write callback.
    func releasePacedTransfers() {
        guard let pacer, pacer.waiting > 0 else { return }
        pacer.release(
            isLive: { [self] transfer in pool.transfers[transfer.easy.handle] === transfer },
            unpause: { transfer in transfer.easy.unpause() })
    }
}
