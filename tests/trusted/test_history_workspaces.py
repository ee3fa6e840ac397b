"""The history is the trusted side's: each workspace's alone, out of every cell's
reach, and never held up by what another process or a pattern does.

- Two kernels in two workspaces share the user's one database: neither's
  %history -g nor history_request(search, tail, range) returns the other's
  cells, while each still finds its own.
- A cell cannot open the database, even when the workspace is the folder above
  its folder; a --history whose folder holds the workspace, or lies in it, is
  not used at all.
- Another process holding a read transaction, or the write lock, while cells
  run does not make the kernel lose them: they are in the file after it lets go.
- The pattern of the report ("*" and 1,300 classes) answers at once with an
  error; a costly one under the bound is stopped at its deadline, and the
  heartbeat keeps answering all the while.
- A search runs on the history's own thread: while a costly one runs, the
  heartbeat answers every ping promptly and an interrupt_request on control
  is answered before the search is.
"""

import os
import sqlite3
import threading
import time
import uuid

import pytest
import zmq

from sandpit_testing import TIMEOUT, install_spec, start, stop

# The longest the heartbeat may go unanswered: jupyter_client calls a kernel
# dead after a few seconds without one.
HEARTBEAT_GAP = 3.0


def search(k, pattern, **kw):
    """A history_request search's reply content."""
    msg_id = k.kc.history(raw=True, output=kw.pop("output", False),
                          hist_access_type="search", pattern=pattern, **kw)
    return k.shell_reply(msg_id)["content"]


def history(k, **query):
    reply = k.request("history", raw=True, output=False, **query)
    assert reply["content"]["status"] == "ok", reply["content"]
    return reply["content"]["history"]


history_of = history  # where a test's parameter is called history


def run_error(k, code):
    reply, _ = k.execute(code)
    return reply["content"]


def test_another_workspace_s_history_is_never_returned(jupyter_dir, tmp_path):
    token = "sk-" + uuid.uuid4().hex
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    # the user's default database, in the tests' Jupyter data folder
    a = start("sandpit", cwd=str(a_dir))
    try:
        a.run("API_SECRET = %r" % token)
        a.execute("API_SECRET")
        a_session = history(a, hist_access_type="tail", n=1)[0][0]
        b = start("sandpit", cwd=str(b_dir))
        try:
            b.run("mine = 'of b'")
            seen = b.run("%history -g *SECRET* -o")
            assert token not in seen and "API_SECRET" not in seen, seen
            assert token not in b.run("%history -g -o")
            for unique in (False, True):
                reply = search(b, "*SECRET*", unique=unique, output=True)
                assert reply["status"] == "ok", reply
                # B's own %history cell alone
                assert [e[2][0] for e in reply["history"]] == [
                    "%history -g *SECRET* -o"], reply
            everything = history(b, hist_access_type="tail", n=10000)
            assert token not in repr(everything)
            assert "mine = 'of b'" in [e[2] for e in everything]
            assert history(b, hist_access_type="range", session=a_session) == []
            # A's own search still finds its cells
            found = search(a, "*SECRET*", output=True)
            assert found["status"] == "ok", found
            assert [e[2][0] for e in found["history"]] == [
                "API_SECRET = %r" % token, "API_SECRET"]
            assert token in a.run("%history -g *SECRET* -o")
        finally:
            stop(b)
    finally:
        stop(a)


def layer(k, name):
    k.run("pass")
    info = k.request("kernel_info")["content"]
    return [l for l in info["sandpit"]["layers"] if l["name"] == name][0]


READ_DB = r"""
import os, sqlite3
path = %r
def attempt():
    try:
        with open(path, "rb") as f:
            return "read %%d bytes" %% len(f.read())
    except OSError as e:
        return type(e).__name__
def listed():
    try:
        return sorted(os.listdir(os.path.dirname(path)))
    except OSError as e:
        return type(e).__name__
def query():
    try:
        con = sqlite3.connect("file:%%s?mode=ro" %% path, uri=True)
        return con.execute("SELECT count(*) FROM history").fetchone()
    except sqlite3.Error as e:
        return "refused"
print(attempt(), listed(), query())
"""


@pytest.mark.parametrize("history", ["default", "off"])
def test_a_cell_cannot_open_the_history_database(jupyter_dir, tmp_path, history):
    """The workspace is the Jupyter data folder itself, just above the
    database's folder; with --history off the kernel keeps its own history in
    memory, and the user's database, which other kernels use, stays hidden."""
    data = tmp_path / "data"
    env = dict(os.environ, JUPYTER_DATA_DIR=str(data))
    db = data / "sandpit" / "history.sqlite"
    data.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = start("sandpit", cwd=str(elsewhere), env=env)
    try:
        other.run("secret = 'of another workspace'")
    finally:
        stop(other)
    assert db.exists()
    name = "sandpit" if history == "default" else install_spec(
        jupyter_dir, "--history", "off")
    k = start(name, cwd=str(data), env=env)
    try:
        k.run("mine = 'in this one'")
        mnt = layer(k, "mount-namespace")
        if mnt["state"] != "active":
            pytest.skip("no mount namespace here, nothing can hide a path: %s"
                        % mnt["detail"])
        said = k.run(READ_DB % str(db))
        assert said.startswith(("PermissionError", "FileNotFoundError")), said
        assert "history.sqlite" not in said and "refused" in said, said
        # the kernel's own history is whole
        assert [e[2] for e in history_of(k, hist_access_type="tail", n=3)][:2] == [
            "mine = 'in this one'", "pass"]
    finally:
        stop(k)


@pytest.mark.parametrize("where", ["the workspace itself", "a folder in the workspace"])
def test_a_database_among_the_cells_is_not_used(jupyter_dir, tmp_path, where):
    """--history in the workspace itself (its folder holds the workspace and
    cannot be hidden), or in a folder inside it (hidden by its path, which a
    cell could move away from under the next worker's cover): the kernel keeps
    its history in memory and says why."""
    db = tmp_path / ("history.sqlite" if where == "the workspace itself"
                     else "sub/db/history.sqlite")
    log_path = tmp_path.parent / (tmp_path.name + "-kernel.log")
    with open(log_path, "wb") as log:
        k = start(install_spec(jupyter_dir, "--history", str(db)), cwd=str(tmp_path),
                  stderr=log)
    try:
        k.run("kept = 1")
        assert [e[2] for e in history(k, hist_access_type="tail", n=1)] == ["kept = 1"]
    finally:
        stop(k)
    assert not db.exists()
    said = [line for line in log_path.read_text().splitlines() if "history:" in line]
    assert len(said) == 1 and "cannot be hidden from cells" in said[0], said
    log_path.unlink()


@pytest.mark.parametrize("hold", ["a reader's transaction", "the write lock"])
def test_another_process_holding_the_file_loses_no_cell(jupyter_dir, tmp_path, hold):
    db = tmp_path / "db" / "history.sqlite"
    ws = tmp_path / "ws"
    ws.mkdir()
    log_path = tmp_path / "kernel.log"
    with open(log_path, "wb") as log:
        k = start(install_spec(jupyter_dir, "--history", str(db)), cwd=str(ws),
                  stderr=log)
    holder = None
    try:
        k.run("one = 1")
        holder = sqlite3.connect(str(db), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE" if hold == "the write lock" else "BEGIN")
        holder.execute("SELECT count(*) FROM history").fetchone()
        during = ["two = 2", "three = 3", "print(one + two + three)"]
        for code in during[:2]:
            k.run(code)
        time.sleep(1.5)  # held a while: longer than any wait of the kernel's
        assert k.run(during[2]) == "6\n"
        assert [e[2] for e in history(k, hist_access_type="range", session=0)] == [
            "one = 1"] + during
        holder.execute("ROLLBACK")
        k.run("four = 4")
        assert k.run("%history -l 2") == "print(one + two + three)\nfour = 4\n"
    finally:
        if holder is not None:
            if holder.in_transaction:
                holder.execute("ROLLBACK")
            holder.close()
        stop(k)
    con = sqlite3.connect(str(db))
    try:
        kept = [r[0] for r in con.execute("SELECT source_raw FROM history "
                                          "ORDER BY session, line")]
    finally:
        con.close()
    assert kept == ["one = 1"] + during + ["four = 4", "%history -l 2"]
    said = [line for line in log_path.read_text().splitlines() if "history:" in line]
    assert not [line for line in said if "in memory from now on" in line], said


class Heartbeat(threading.Thread):
    """Pings the kernel's heartbeat until stopped (or a bounded count), and
    keeps the longest wait for an answer."""

    def __init__(self, k, pause=0.05):
        super().__init__(daemon=True)
        info = k.km.get_connection_info()
        self.url = "%s://%s:%d" % (info["transport"], info["ip"], info["hb_port"])
        self.longest = 0.0
        self.answered = 0
        self.pause = pause
        self.times = []  # when each answer came (time.monotonic)
        self.done = threading.Event()

    def run(self):
        ctx = zmq.Context.instance()
        for _ in range(2000):  # at most about 2000 * 0.05 s of pings
            if self.done.is_set():
                return
            sock = ctx.socket(zmq.REQ)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(self.url)
            t0 = time.monotonic()
            sock.send(b"ping")
            got = sock.poll(int(TIMEOUT * 1000))
            waited = time.monotonic() - t0
            if got:
                sock.recv()
                self.answered += 1
                self.times.append(time.monotonic())
            sock.close()
            self.longest = max(self.longest, waited)
            if not got:
                return
            time.sleep(self.pause)


def test_a_costly_search_does_not_stop_the_heartbeat(jupyter_dir, tmp_path):
    db = tmp_path / "db" / "history.sqlite"
    ws = tmp_path / "ws"
    ws.mkdir()
    k = start(install_spec(jupyter_dir, "--history", str(db)), cwd=str(ws))
    beat = Heartbeat(k)
    try:
        k.run("big = %r" % ("a" * (1 << 20)))
        beat.start()
        report = "*" + "[a]" * 1300 + "b"
        refused = [search(k, report) for _ in range(6)]
        # the same through %history -g, over the link
        magic = run_error(k, "%history -g " + "[a]" * 1300 + "b")
        # under the bound, but costly over a 1 MB cell: stopped at the deadline,
        # or done within it
        costly = [search(k, "*" + "[a]" * 60 + "b") for _ in range(6)]
        # and the history still answers what is cheap
        first = history(k, hist_access_type="range", session=0, stop=2)
        time.sleep(0.5)
    finally:
        beat.done.set()
        beat.join(TIMEOUT)
        stop(k)
    assert beat.answered > 0
    assert beat.longest < HEARTBEAT_GAP, beat.longest
    for reply in refused:
        assert reply["status"] == "error" and "at most" in reply["evalue"], reply
    assert magic["status"] == "error" and "at most" in magic["evalue"], magic
    for reply in costly:
        assert reply["status"] in ("ok", "error"), reply
        if reply["status"] == "error":
            assert "took longer than" in reply["evalue"], reply
        else:
            assert reply["history"] == [], reply
    assert first[0][2].startswith("big = ")


# The longest a ping may wait while a search runs: generous (the machine may
# be loaded), and far below the search's own length.
PING_WAIT = 1.0


def test_the_loop_answers_while_a_search_runs(jupyter_dir, tmp_path):
    db = tmp_path / "db" / "history.sqlite"
    ws = tmp_path / "ws"
    ws.mkdir()
    k = start(install_spec(jupyter_dir, "--history", str(db)), cwd=str(ws))
    beat = Heartbeat(k, pause=0.01)
    try:
        for i in range(8):  # 8 MB of cells: several hundred ms of glob
            k.run("big%d = %r" % (i, "a" * (1 << 20)))
        beat.start()
        time.sleep(0.2)
        results = []
        for _ in range(3):
            sent = time.monotonic()
            msg_id = k.kc.history(raw=True, output=False, hist_access_type="search",
                                  pattern="*" + "[a]" * 60 + "b")
            time.sleep(0.05)
            interrupt = k.kc.session.msg("interrupt_request", {})
            k.kc.control_channel.send(interrupt)
            control = k.kc.get_control_msg(timeout=TIMEOUT)
            interrupted = time.monotonic()
            reply = k.shell_reply(msg_id)
            answered = time.monotonic()
            results.append((sent, interrupted, answered, control, reply["content"]))
        time.sleep(0.1)
    finally:
        beat.done.set()
        beat.join(TIMEOUT)
        stop(k)
    assert beat.answered > 0
    assert beat.longest < PING_WAIT, beat.longest
    for sent, interrupted, answered, control, content in results:
        assert control["parent_header"]["msg_id"] == interrupt["header"]["msg_id"] or \
            control["msg_type"] == "interrupt_reply", control
        assert control["content"]["status"] == "ok", control
        # the search ran while the loop went on: the interrupt was answered,
        # and pings were, before the search's reply came
        assert interrupted < answered
        during = [t for t in beat.times if sent < t < answered]
        assert len(during) >= 3, (len(during), answered - sent)
        assert content["status"] in ("ok", "error"), content
        if content["status"] == "error":
            assert "took longer than" in content["evalue"], content
        else:
            assert content["history"] == [], content


MOVE_AWAY = r"""
import os
os.rename(%r, %r)
os.makedirs("%s/data/sandpit")
"""


def test_a_moved_history_folder_stays_hidden(jupyter_dir, tmp_path):
    """The Jupyter data folder deep in the workspace: a cell renames a folder
    above it, makes an empty one in its place and ends its worker. The next
    worker hides the database's folder where it went, not the one in its place."""
    data = tmp_path / "x" / "data"
    data.mkdir(parents=True)
    env = dict(os.environ, JUPYTER_DATA_DIR=str(data))
    k = start("sandpit", cwd=str(tmp_path), env=env)
    try:
        k.run("secret = 'in the file'")
        mnt = layer(k, "mount-namespace")
        if mnt["state"] != "active":
            pytest.skip("no mount namespace here, nothing can hide a path: %s"
                        % mnt["detail"])
        # twice: the second time, the next worker may come from a template
        # started after the first
        for old, new in (("x", "y"), ("y", "z")):
            reply, _ = k.execute(MOVE_AWAY % (old, new, old))
            if reply["content"]["status"] != "ok":
                assert reply["content"]["ename"] in ("OSError", "PermissionError"), reply
                pytest.skip("the folders above the history could not be moved here: "
                            "nothing to follow")
            k.execute("import os; os.kill(os.getpid(), 9)")
            moved = tmp_path / new / "data" / "sandpit" / "history.sqlite"
            assert moved.exists()
            said = None
            for _ in range(50):  # the next worker, bounded
                reply, outputs = k.execute(READ_DB % str(moved))
                if reply["content"]["status"] == "ok":
                    said = "".join(m["content"].get("text", "") for m in outputs
                                   if m["msg_type"] == "stream")
                    break
                time.sleep(0.2)
            assert said is not None
            assert said.startswith(("PermissionError", "FileNotFoundError")), (new, said)
            assert "history.sqlite" not in said and "refused" in said, (new, said)
    finally:
        stop(k)
