/// Which final names the downloads of a run hold: the one part of naming
/// that depends on who else is downloading into the folder.
///
/// `TargetRegistry` keeps everything that is the same for every backend (the
/// files on disk are always local: the name index, the taken rule, the part
/// and final names) and asks this store only whether another download holds a
/// name. One engine alone keeps the holds in memory (`LocalReservations`); a
/// queue shared by several workers would keep them in its database, where
/// `reserve` is an insert that fails when another worker holds the name.
///
/// Called on the engine thread only. `reserve` may block briefly (a database
/// round trip), as the state's `commitAndWait` does before a part file.
protocol NameReservations: AnyObject {
    /// Whether a download holds `relative` (relative to the output directory).
    func isReserved(_ relative: String) -> Bool
    /// Holds `relative` for a download; false when another holder has it
    /// meanwhile (a shared store can lose a race that `isReserved` did not see).
    func reserve(_ relative: String) -> Bool
    /// Lets `relative` go (the download ended, or moved to another name).
    func release(_ relative: String)
}

/// The holds of one engine, in memory: nobody else reserves names here.
final class LocalReservations: NameReservations {
    private var held: Set<String> = []

    func isReserved(_ relative: String) -> Bool { held.contains(relative) }

    func reserve(_ relative: String) -> Bool { held.insert(relative).inserted }

    func release(_ relative: String) { held.remove(relative) }
}
