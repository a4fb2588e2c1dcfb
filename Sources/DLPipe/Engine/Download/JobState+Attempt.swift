/// The attempt a transferring phase carries: read through `Phase.attempt`,
/// changed in place through `JobState.updateAttempt`.
extension JobState.Phase {
    /// The attempt under way: only requesting, awaitingVerdict, holdingBody
    /// and receiving have one.
    var attempt: Attempt? {
        switch self {
        case .requesting(let under), .awaitingVerdict(let under), .holdingBody(let under), .receiving(let under):
            under
        default:
            nil
        }
    }

    /// The same phase carrying `attempt` instead (a phase that carries none
    /// stays as it is).
    func carrying(_ attempt: Attempt) -> Self {
        switch self {
        case .requesting: .requesting(attempt)
        case .awaitingVerdict: .awaitingVerdict(attempt)
        case .holdingBody: .holdingBody(attempt)
        case .receiving: .receiving(attempt)
        default: self
        }
    }
}
