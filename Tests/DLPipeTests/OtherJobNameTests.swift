import Testing

@testable import DLPipe
@testable import DLPipeQueue

/// How a worker names another job it found writing into its directory:
/// by the name this database gives its id, unless the job's folder records
/// another (a job of another queue database that has the same id).
@Suite struct OtherJobNameTests {
    @Test func aJobOfThisDatabaseIsNamedByIt() {
        #expect(QueueWorker.OtherJob(id: 7, name: "mirror").described == "\"mirror\" (queue job 7)")
        #expect(QueueWorker.OtherJob(id: 7, name: "mirror", recorded: "mirror").described == "\"mirror\" (queue job 7)")
    }

    @Test func aFolderThatRecordsAnotherNameIsAnotherDatabasesJob() {
        let other = QueueWorker.OtherJob(id: 7, name: "mirror", recorded: "feeds")
        #expect(other.described == "\"feeds\" (queue job 7 of another queue database)")
        #expect(QueueWorker.OtherJob(id: 7, name: nil, recorded: "feeds").described == "\"feeds\" (queue job 7 of another queue database)")
        #expect(QueueWorker.OtherJob(id: 7, name: nil).described == "queue job 7 of another queue database")
    }

    @Test func theMessageNamesEveryJob() {
        let line = QueueWorker.otherJobsMessage(
            [QueueWorker.OtherJob(id: 3, name: "a"), QueueWorker.OtherJob(id: 4, name: nil, recorded: "b")],
            directory: "/srv/out", job: "c")
        #expect(line.contains("now: \"a\" (queue job 3), \"b\" (queue job 4 of another queue database); job \"c\""), "\(line)")
    }
}
