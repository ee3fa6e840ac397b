"""The history, which the supervisor keeps in an SQLite database of the user's:
a kernel restarted through jupyter_client (a new process, as the spec has it)
still has the earlier session's cells, for history_request and for %history in
a cell; several kernels write to one database at once; a corrupt database, or
one another process holds locked from before the start, leaves the history
in memory and the log says so once; --history off keeps it in memory, and by
default it is in the Jupyter data folder. The worker's own queries are checked
as a client's are. Each database lies in a folder of its own (db/), beside
the workspace (ws/): one inside the workspace, or holding it, could not be
kept hidden from cells (tests/trusted)."""

import os
import sqlite3

import pytest

from sandpit_testing import TIMEOUT, install_spec, start, stop


def history(k, **query):
    reply = k.request("history", raw=True, output=False, **query)
    assert reply["content"]["status"] == "ok", reply["content"]
    return reply["content"]["history"]


def ws(tmp_path):
    """The kernel's workspace, beside the database's folder: a --history
    folder inside the workspace is not used (tests/trusted)."""
    folder = tmp_path / "ws"
    folder.mkdir(exist_ok=True)
    return str(folder)


def log_lines(path, start):
    return [line for line in path.read_text().splitlines() if start in line]


def test_a_restarted_kernel_has_the_earlier_session(jupyter_dir, tmp_path):
    db = tmp_path / "db" / "history.sqlite"
    k = start(install_spec(jupyter_dir, "--history", str(db)), cwd=ws(tmp_path))
    try:
        k.run("alpha = 20")
        k.execute("alpha + 1")
        first = history(k, hist_access_type="range", session=0, start=1)
        assert [e[1:] for e in first] == [[1, "alpha = 20"], [2, "alpha + 1"]]
        session = first[0][0]
        old = k.km.provisioner.process
        k.km.restart_kernel(now=False)
        k.kc.wait_for_ready(timeout=TIMEOUT)
        k.drain_iopub()
        # a new process, as the spec has it, and it ended by itself
        assert old.poll() == 0
        assert history(k, hist_access_type="range", session=-1, start=1) == first
        assert history(k, hist_access_type="range", session=session, start=2) == first[1:]
        reply = k.request("history", hist_access_type="tail", n=3, output=True, raw=True)
        assert [session, 2, ["alpha + 1", "21"]] in reply["content"]["history"]
        found = history(k, hist_access_type="search", pattern="alpha*", unique=True)
        assert [e[2] for e in found] == ["alpha = 20", "alpha + 1"]

        # %history in a cell, over the link
        def numbered(line, text, other=True):
            label = "%d/%d" % (session, line) if other else str(line)
            return "%s: %s\n" % (label.rjust(4), text)
        k.run("beta = 2")
        assert k.run("%history -n ~1/") == numbered(1, "alpha = 20") + numbered(
            2, "alpha + 1")
        assert k.run("%history 1") == "beta = 2\n"
        assert k.run("%hist -g alpha -u") == numbered(1, "alpha = 20") + numbered(
            2, "alpha + 1") + numbered(4, "%hist -g alpha -u", other=False)
        assert k.run("%history -l 2") == "%history 1\n%hist -g alpha -u\n"
        assert k.run("%history -o ~1/2") == "alpha + 1\n21\n"
    finally:
        stop(k)


def test_the_worker_queries_are_checked(jupyter_dir, tmp_path):
    k = start(install_spec(jupyter_dir, "--history", "off"), cwd=str(tmp_path))
    try:
        k.run("import sandpit.link as L")
        reply, _ = k.execute("L.history({'hist_access_type': 'tail', 'n': -1})")
        assert reply["content"]["ename"] == "HistoryError"
        assert '"n" must be a whole number' in reply["content"]["evalue"]
        reply, _ = k.execute("L.history({'hist_access_type': 'everything'})")
        assert "tail, range or search" in reply["content"]["evalue"]
        reply, _ = k.execute("L.history({'hist_access_type': 'search', 'pattern': 5})")
        assert '"pattern"' in reply["content"]["evalue"]
        # a frame that is not one is dropped; the kernel goes on
        k.run("L.send({'type': 'history', 'id': 'x', 'query': []})")
        assert k.run("print(len(L.history({'n': 2})))") == "2\n"
        assert k.run("%history -l 1") == "print(len(L.history({'n': 2})))\n"
    finally:
        stop(k)


def test_two_kernels_write_at_once(jupyter_dir, tmp_path):
    db = tmp_path / "db" / "shared.sqlite"
    name = install_spec(jupyter_dir, "--history", str(db))
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    kernels = []
    try:
        for path in logs:
            with open(path, "wb") as log:
                kernels.append(start(name, cwd=ws(tmp_path), stderr=log))
        sent = []
        for i in range(25):
            for n, k in enumerate(kernels):
                sent.append((k, k.kc.execute("v%d_%d = %d" % (n, i, i))))
        for k, msg_id in sent:
            assert k.shell_reply(msg_id)["content"]["status"] == "ok"
        sessions = [history(k, hist_access_type="range", session=0)[0][0] for k in kernels]
    finally:
        for k in kernels:
            stop(k)
    assert sessions[0] != sessions[1]
    con = sqlite3.connect(str(db))
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        counts = dict(con.execute("SELECT session, count(*) FROM history GROUP BY session"))
        assert counts == {sessions[0]: 25, sessions[1]: 25}
        ended = con.execute("SELECT count(*) FROM sessions WHERE end IS NOT NULL "
                            "AND num_cmds = 25").fetchone()[0]
        assert ended == 2
    finally:
        con.close()
    for path in logs:
        assert log_lines(path, "history:") == []


def test_a_corrupt_database_leaves_the_history_in_memory(jupyter_dir, tmp_path):
    db = tmp_path / "db" / "history.sqlite"
    garbage = b"this is not an SQLite database\n" * 100
    db.parent.mkdir()
    db.write_bytes(garbage)
    log_path = tmp_path / "kernel.log"
    with open(log_path, "wb") as log:
        k = start(install_spec(jupyter_dir, "--history", str(db)), cwd=ws(tmp_path),
                  stderr=log)
    try:
        for code in ("one = 1", "two = 2", "one + two"):
            k.run(code)
        assert [e[2] for e in history(k, hist_access_type="tail", n=3)] == [
            "one = 1", "two = 2", "one + two"]
    finally:
        stop(k)
    said = log_lines(log_path, "history:")
    assert len(said) == 1, said
    assert "cannot use %s (file is not a database)" % db in said[0]
    assert "in memory" in said[0]
    assert db.read_bytes() == garbage  # left as it was


@pytest.mark.parametrize("when", ["new file, before the start",
                                  "an earlier kernel's database, before the start"])
def test_a_locked_database_leaves_the_history_in_memory(jupyter_dir, tmp_path, when):
    """Another process holds the database in an exclusive transaction from
    before the kernel's start, longer than the second the start waits: the
    kernel keeps serving cells, keeps this session's history in memory for
    history_request and %history, and says so once in its log, however long
    the lock is held and after it is gone. (A lock taken after the start
    makes the cells wait in memory for the file: tests/trusted.) The unit
    test of history.c covers the module's fallback; this one covers the
    kernel around it, from its start."""
    db = tmp_path / "db" / "history.sqlite"
    name = install_spec(jupyter_dir, "--history", str(db))
    if when.startswith("an earlier"):
        k = start(name, cwd=ws(tmp_path))
        try:
            k.run("earlier = 1")
        finally:
            stop(k)
    db.parent.mkdir(exist_ok=True)
    locker = sqlite3.connect(str(db), isolation_level=None)
    log_path = tmp_path / "kernel.log"
    try:
        locker.execute("BEGIN EXCLUSIVE")
        with open(log_path, "wb") as log:
            k = start(name, cwd=ws(tmp_path), stderr=log)
        try:
            k.run("one = 1")
            k.run("two = 2")
            assert k.run("print(one + two)") == "3\n"
            cells = ["one = 1", "two = 2", "print(one + two)"]
            assert [e[2] for e in history(k, hist_access_type="range", session=0)] == cells
            locker.execute("ROLLBACK")
            # The lock is gone; the history stays in memory, as the log said.
            k.run("three = 3")
            assert k.run("%history -l 2") == "print(one + two)\nthree = 3\n"
            assert [e[2] for e in history(k, hist_access_type="tail", n=6)] == cells + [
                "three = 3", "%history -l 2"]
        finally:
            stop(k)
    finally:
        if locker.in_transaction:
            locker.execute("ROLLBACK")
        locker.close()
    said = log_lines(log_path, "history:")
    assert len(said) == 1, said
    assert "(database is locked)" in said[0] and str(db) in said[0], said[0]
    assert "keeps its history in memory" in said[0], said[0]
    con = sqlite3.connect(str(db))
    try:
        kept = []  # a new file that stayed locked has not even the tables
        if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'history'").fetchone():
            kept = [r[0] for r in con.execute("SELECT source_raw FROM history "
                                              "ORDER BY session, line")]
    finally:
        con.close()
    # What reached the file before the lock, and nothing after it.
    assert kept == {"new file, before the start": [],
                    "an earlier kernel's database, before the start": ["earlier = 1"]}[when]


def test_the_default_database_and_history_off(jupyter_dir, tmp_path):
    data = {"default": tmp_path / "data-default", "off": tmp_path / "data-off"}
    specs = {"default": "sandpit", "off": install_spec(jupyter_dir, "--history", "off")}
    for which in ("default", "off"):
        env = dict(os.environ, JUPYTER_DATA_DIR=str(data[which]))
        k = start(specs[which], cwd=str(tmp_path), env=env)
        try:
            k.run("kept_%s = 1" % which)
            assert [e[2] for e in history(k, hist_access_type="tail", n=1)] == [
                "kept_%s = 1" % which]
            if which == "off":
                # A restart request ends the kernel, as the spec says; the client
                # starts another, which has nothing of the first.
                proc = k.km.provisioner.process
                msg = k.kc.session.msg("shutdown_request", {"restart": True})
                k.kc.control_channel.send(msg)
                reply = k.kc.get_control_msg(timeout=TIMEOUT)
                assert reply["content"] == {"status": "ok", "restart": True}
                assert proc.wait(timeout=TIMEOUT) == 0
                k.km.restart_kernel(now=True)
                k.kc.wait_for_ready(timeout=TIMEOUT)
                assert history(k, hist_access_type="tail", n=5) == []
        finally:
            stop(k)
    made = data["default"] / "sandpit" / "history.sqlite"
    con = sqlite3.connect(str(made))
    try:
        assert con.execute("SELECT source_raw FROM history").fetchall() == [
            ("kept_default = 1",)]
    finally:
        con.close()
    assert not (data["off"] / "sandpit").exists()
