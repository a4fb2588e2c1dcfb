"""webopen.py FIFO COMMAND...: runs COMMAND (a dlpipe with --web), and when it prints its page's
URL asks the bench's browser, through FIFO, to open it; asks it to close the tab when COMMAND
ends, and exits with COMMAND's status. Its stderr passes through."""
import os
import re
import subprocess
import sys


def tell(fifo, line):
    with open(fifo, "w") as f:
        f.write(line + "\n")


def main():
    fifo, argv = sys.argv[1], sys.argv[2:]
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = None
    for raw in process.stderr:
        if url is None:
            found = re.search(rb"web view at (http://[^ ]+/)", raw)
            if found:
                url = found.group(1).decode()
                tell(fifo, "open " + url)
                continue
        os.write(2, raw)
    status = process.wait()
    if url:
        tell(fifo, "close " + url)
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
