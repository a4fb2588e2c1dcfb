internal import CPosix

/// Fixed malloc thresholds for the command-line tool (a library user keeps its own).
///
/// glibc's defaults move the mmap threshold as blocks are freed and give memory
/// back to the kernel as soon as 128 KiB sit free at the top of the heap. With a
/// transfer's 256 KiB receive buffer allocated and freed once per file, that
/// meant fresh pages, and a page fault for each, several times per small file
/// (about 6,000 faults for 2,000 files of 16 KiB; 3,000 with these settings).
/// Blocks up to 1 MiB now come from the heap, and up to 16 MiB of free heap is kept.
enum MemoryTuning {
    static func apply() {
        _ = dl_mallopt(dl_malloc_mmap_threshold(), 1 << 20)
        _ = dl_mallopt(dl_malloc_trim_threshold(), 16 << 20)
    }
}
