/// A control of a download that `DownloadEngine` passes on to the worker
/// of a shared queue that holds it (`QueueParticipant.forward`).
package enum QueueControl: String, Sendable, CaseIterable {
    case pause, resume, cancel
}
