import Synchronization

/// The engine's side of "reply exactly once" for hook calls.
///
/// Each call gets a gate; the first answer through it wins: the hook's reply,
/// or the engine's own failure when the deadline passes first. Any answer
/// after that is dropped and counted (`ignored`), so a hook that replies twice
/// can no longer take a second verdict's worth off `pendingHookCalls` (which
/// would leave the drain waiting forever), and one that never replies fails
/// its download instead of holding it open.
final class HookReplyGate: Sendable {
    private let answered = Atomic<Bool>(false)

    /// True for the first caller only.
    func claim() -> Bool {
        !answered.exchange(true, ordering: .acquiringAndReleasing)
    }

    var isAnswered: Bool { answered.load(ordering: .acquiring) }
}
