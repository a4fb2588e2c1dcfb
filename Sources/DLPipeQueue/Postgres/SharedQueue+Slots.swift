import DLPipe

/// A host slot counts transfers, not claims (schema version 5): a claim takes
/// its host's slot, and gives it back when its transfer ends, while its file
/// still waits to be placed and reported. docs/design/queue-schema.md.
extension SharedQueue {
    /// Gives back the host slots of claims whose transfers ended, each under
    /// its claim's token: the row stays running under that token, its
    /// `slot_host` becomes NULL and its host's `in_flight` falls by one. A
    /// slot given back already, a claim taken back or ended meanwhile, or a
    /// token that is not the row's gives nothing back. Returns how many went.
    ///
    /// The rows are locked first (`FOR NO KEY UPDATE`) so that the slot read
    /// is the one the update changes: a take-back that committed meanwhile is
    /// seen, and a slot is never given back twice. The claim loop gives slots
    /// back in its report's statement (`report(_:freeing:run:on:)`, the same
    /// SQL), so that one statement takes the hosts rows for both.
    @discardableResult
    package func giveBack(_ slots: [(id: Int64, token: Int64)], on connection: PostgresConnection) throws(PostgresError) -> Int {
        try report([], freeing: slots, on: connection).freed
    }
}
