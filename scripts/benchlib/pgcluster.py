"""A throwaway PostgreSQL cluster for the queue set, made in the bench's work directory,
on the disk being measured. It keeps PostgreSQL's default durability (fsync and
synchronous_commit on): a queue users run keeps its claims across a power cut, so the
commits' flushes are part of what queue mode costs. It listens only on a unix socket in
its own folder and is stopped by its PID.

With `stats`, pg_stat_statements and WAL timing are on, and `statements()` tells what
each run sent: for finding what bounds queue mode, not for the timed rows."""
import glob
import os
import pwd
import shutil
import signal
import subprocess
import time

USER = "dlpipe"  # the superuser initdb makes; the workers connect as it


def binaries():
    """The newest /usr/lib/postgresql/N/bin with initdb and pg_ctl."""
    found = []
    for path in glob.glob("/usr/lib/postgresql/*/bin"):
        version = os.path.basename(os.path.dirname(path))
        if version.isdigit() and os.access(os.path.join(path, "initdb"), os.X_OK):
            found.append((int(version), path))
    if not found:
        raise RuntimeError("no initdb under /usr/lib/postgresql/*/bin: run scripts/setup (it installs postgresql)")
    return max(found)[1]


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def server_binary():
    """The postgres binary a cluster would run, or "postgres" (not found) for the report."""
    try:
        return os.path.join(binaries(), "postgres")
    except RuntimeError:
        return "postgres"


class Cluster:
    def __init__(self, folder, stats=False):
        self.folder, self.stats = folder, stats
        self.bin = binaries()
        self.pid = None
        self.serial = 0
        # initdb and postgres refuse root: as root they run as the postgres system user,
        # which must own the folder (the work directory above it is 0755).
        self.run_as = []
        os.makedirs(folder)
        if os.getuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(folder, account.pw_uid, account.pw_gid)
            self.run_as = ["runuser", "-u", "postgres", "--"]
        os.chmod(folder, 0o700)
        data = os.path.join(folder, "data")
        self._tool("initdb", "-D", data, "-U", USER, "--auth=trust", "--encoding=UTF8", "--locale=C")
        settings = ["", "# scripts/bench: a unix socket in this folder only; durability as shipped.",
                    "listen_addresses = ''", "unix_socket_directories = '%s'" % folder]
        if stats:
            settings += ["shared_preload_libraries = 'pg_stat_statements'", "pg_stat_statements.track = all",
                         "track_wal_io_timing = on",
                         # Every lock wait past 1 ms is logged, with its length when it ends:
                         # workers queueing behind one hot row show as waits (lock_waits()).
                         "log_lock_waits = on", "deadlock_timeout = '1ms'"]
        with open(os.path.join(data, "postgresql.conf"), "a") as f:
            f.write("\n".join(settings) + "\n")
        log = self.log = os.path.join(folder, "server.log")
        self.log_mark = 0
        try:
            self._tool("pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "start")
        except subprocess.CalledProcessError:
            with open(log, errors="replace") as f:
                raise RuntimeError("PostgreSQL did not start: " + f.read()[-1000:])
        with open(os.path.join(data, "postmaster.pid")) as f:
            self.pid = int(f.readline())
        if stats:
            self.sql("CREATE EXTENSION pg_stat_statements")

    def _tool(self, name, *args):
        subprocess.run(self.run_as + [os.path.join(self.bin, name)] + list(args), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def cpu_seconds(self):
        """CPU time the server used so far: the postmaster's own and its reaped children's
        (backends that ended), plus its live children's (the WAL writer, the checkpointer...)."""
        tick = os.sysconf("SC_CLK_TCK")

        def fields(pid):
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()
        own = fields(self.pid)
        total = sum(int(own[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    child = fields(int(entry))
                    if int(child[1]) == self.pid:
                        total += int(child[11]) + int(child[12])
                except (OSError, IndexError, ValueError):
                    pass  # gone meanwhile
        return total / tick

    def url(self, database):
        return "postgresql://%s@/%s?host=%s" % (USER, database, self.folder)

    def sql(self, statement, database="postgres"):
        """Runs one statement with psql; its rows as lists of strings."""
        done = subprocess.run([os.path.join(self.bin, "psql"), "-X", "-q", "-A", "-t", "-F", "\t",
                               "-v", "ON_ERROR_STOP=1", "-h", self.folder, "-U", USER, "-d", database,
                               "-c", statement], check=True, capture_output=True, text=True)
        return [line.split("\t") for line in done.stdout.splitlines() if line]

    def fresh_database(self, template=None):
        """A new database (the queue of one run), a copy of `template` when
        given, else empty; its name."""
        self.serial += 1
        name = "run%d" % self.serial
        self.sql("CREATE DATABASE %s" % name + (" TEMPLATE %s" % template if template else ""))
        if self.stats:
            self.sql("SELECT pg_stat_statements_reset()")
            self.sql("SELECT pg_stat_reset_shared('wal')")
            self.log_mark = os.path.getsize(self.log)
        return name

    def clear_tables(self, database, schema, keep):
        """Empties every table of `schema` in `database` but `keep`."""
        tables = [row[0] for row in self.sql(
            "SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables "
            "WHERE schemaname = '%s' AND tablename <> '%s'" % (schema, keep), database)]
        if tables:
            self.sql("TRUNCATE %s RESTART IDENTITY" % ", ".join(tables), database)

    def drop(self, database):
        self.sql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % database)

    def stop(self, keep=False):
        """Stops the server by its PID (an immediate shutdown: nothing here is kept)
        and removes its folder unless `keep`."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGQUIT)
                for _ in range(400):
                    os.kill(self.pid, 0)
                    if _zombie(self.pid):  # gone; its parent (not us) has yet to reap it
                        break
                    time.sleep(0.025)
            except ProcessLookupError:
                pass
            self.pid = None
        if not keep:
            shutil.rmtree(self.folder, ignore_errors=True)

    # -- what a run sent (with `stats`) ------------------------------------------------

    def statements(self, database):
        """(calls, rows, total ms, query) of each statement the workers sent to `database`,
        the most costly first, and the WAL's (records, writes, syncs, sync ms)."""
        rows = self.sql(
            "SELECT calls, rows, round(total_exec_time::numeric, 1), "
            "left(regexp_replace(query, '\\s+', ' ', 'g'), 300) FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '%s') "
            "ORDER BY total_exec_time DESC" % database)
        wal = self.sql("SELECT wal_records, wal_write, wal_sync, round(wal_sync_time::numeric, 1) FROM pg_stat_wal")
        return [(int(c), int(r), float(t), q) for c, r, t, q in rows], tuple(wal[0]) + self.lock_waits()

    def lock_waits(self):
        """(waits, ms waited, by what) of the lock waits longer than 1 ms since the last
        fresh database: the server logs each one that ends ("... acquired X on Y after N
        ms"), then where (CONTEXT: ... relation "R") and the statement; by what is
        [(waits, ms, "lock, relation: statement")], the longest first."""
        waits, waited, kinds = 0, 0.0, {}
        with open(self.log, errors="replace") as f:
            f.seek(self.log_mark)
            lines = f.read().splitlines()
        for index, line in enumerate(lines):
            if " acquired " not in line or not line.rstrip().endswith(" ms"):
                continue
            try:
                ms = float(line.rstrip().rsplit(" ", 2)[-2])
            except ValueError:
                continue
            lock = line.split(" acquired ", 1)[1].rsplit(" after ", 1)[0]
            lock = " ".join(word for word in lock.split() if not word[:1].isdigit() and not word.startswith("("))
            relation, statement = "", ""
            for after in lines[index + 1:index + 4]:
                if "CONTEXT:" in after and 'relation "' in after:
                    relation = after.split('relation "', 1)[1].split('"', 1)[0]
                elif "STATEMENT:" in after:
                    statement = " ".join(after.split("STATEMENT:", 1)[1].split())[:60]
                    break
            key = "%s%s: %s" % (lock, ", " + relation if relation else "", statement)
            count, total = kinds.get(key, (0, 0.0))
            kinds[key] = (count + 1, total + ms)
            waits += 1
            waited += ms
        by = sorted(((c, round(t, 1), k) for k, (c, t) in kinds.items()), key=lambda x: -x[1])
        return waits, round(waited, 1), by
