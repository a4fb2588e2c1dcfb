import DLPipe

extension QueueWorker {
    /// The run this worker works for (`QueueParticipant.runNumber`).
    package var runNumber: Int64? { run }
}
