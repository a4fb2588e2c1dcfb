/// Help texts in the OVERVIEW / USAGE / OPTIONS layout.
enum HelpText {
    static let main = """
        OVERVIEW: dlpipe, a scriptable download pipeline

        USAGE: dlpipe <command> [options]

        COMMANDS:
          get URL... [options]    download URLs (-i FILE for a list, - for stdin)

        OPTIONS:
          -h, --help              show help (also: dlpipe get --help)
          -V, --version           show the version

        EXIT CODES:
          0 every download finished or was skipped, 1 at least one failed, 2 usage error

        """

    static let get = """
        OVERVIEW: download URLs through the dlpipe engine

        USAGE: dlpipe get URL... [options]
               dlpipe get -i FILE [options]

        OPTIONS:
          -i, --input FILE        read URLs from FILE, one a line (- for stdin; # comments)
          -o, --output NAME       the file name (one URL only)
          -d, --dir DIR           output directory (default: .)
          -j, --concurrency N     transfers at once (default: 8)
          --per-host N            transfers at once per host (default: 4)
          --retries N             retries of network errors, timeouts, 408, 429, 5xx (default: 3)
          --timeout SECONDS       no progress for that long fails the attempt (default: 30)
          --rate BYTES[/s]        total speed cap; K, M, G suffixes (e.g. 500K, 2M)
          --sha256 HEX            expected SHA-256 of the file (one URL only)
          -H, --header "N: V"     an extra request header (not sent after a redirect to
                                  another host if it is Authorization or Cookie)
          --json                  one JSON object per event on stdout (JSON Lines)
          -q, --quiet             print nothing but errors
          --progress MODE         auto, bars, lines or none (default: auto: bars on a terminal)
          -h, --help              show this help

        EXIT CODES:
          0 all finished or skipped, 1 at least one failed, 2 usage error

        """
}
