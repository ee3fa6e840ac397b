"""A history search must not hold the supervisor's loop (issue #9, hole 6).

The supervisor answers history_request itself, in its one loop: a search of
20,000 distinct entries with "unique" took 1.4 s there, growing with the square
of the count, during which no heartbeat, interrupt or output was served. The
search must grow in proportion to the history: from 2,500 entries to 20,000
(eight times as many) it may take about eight times as long, not sixty-four.
No absolute speed is asserted: both searches run on the same machine, a moment
apart, and each is the best of a few tries.
"""

import time

import pytest

from sandbox_helpers import TIMEOUT, boot, stop
from sandpit_testing import raw_socket

SMALL, LARGE = 2500, 20000
# Linear: about 8 (a little more, as larger data fits caches less well);
# quadratic: about 64.
MAX_GROWTH = 24
TRIES = 5


@pytest.fixture(scope="module")
def box(jupyter_dir, tmp_path_factory):
    # A database of its own: the user's holds every other test's cells (in
    # other workspaces, but a search still reads past them). In a folder of
    # its own, beside the workspace: one inside it or holding it could not be
    # kept hidden from cells.
    folder = tmp_path_factory.mktemp("history")
    (folder / "ws").mkdir()
    k = boot(jupyter_dir, "--history", str(folder / "db" / "history.sqlite"),
             cwd=folder / "ws")
    # Only a socket of our own from here: the client's channels would spend the
    # test's time decoding 60,000 status messages.
    k.kc.stop_channels()
    k.sock = raw_socket(k)
    yield k
    k.sock.close()
    stop(k)


def fill(k, start, stop_, batch=500):
    """Cells start..stop_-1, each a distinct input, sent a batch at a time without
    waiting, then the batch's replies (ZeroMQ drops replies beyond its high-water
    mark of 1,000 that nobody reads)."""
    for first in range(start, stop_, batch):
        last = min(first + batch, stop_)
        for i in range(first, last):
            k.kc.session.send(k.sock, "execute_request", {
                "code": "x = %d" % i, "silent": False, "store_history": True,
                "user_expressions": {}, "allow_stdin": False, "stop_on_error": False})
        for _ in range(first, last):
            assert k.sock.poll(TIMEOUT * 1000), "no reply"
            _, reply = k.kc.session.recv(k.sock, mode=0)
            assert reply["content"]["status"] == "ok", reply["content"]


def search(k, unique):
    """The best time of a few searches of the whole history, and the last answer."""
    best = None
    for _ in range(TRIES):
        t0 = time.monotonic()
        k.kc.session.send(k.sock, "history_request", {
            "hist_access_type": "search", "pattern": "x = *", "unique": unique,
            "raw": True, "output": False})
        assert k.sock.poll(TIMEOUT * 1000), "no reply"
        frames = k.sock.recv_multipart()  # read, not decoded: the kernel's time
        took = time.monotonic() - t0
        best = took if best is None else min(best, took)
    _, frames = k.kc.session.feed_identities(frames)
    reply = k.kc.session.deserialize(frames)
    assert reply["content"]["status"] == "ok", reply["content"]
    return best, reply["content"]["history"]


def test_a_unique_search_grows_with_the_history_not_its_square(box):
    fill(box, 0, SMALL)
    small, found = search(box, True)
    assert len(found) == SMALL
    fill(box, SMALL, LARGE)
    # a few repeats: unique keeps the latest of each
    fill(box, 0, 3)
    large, found = search(box, True)
    plain, everything = search(box, False)
    print("unique search: %.1f ms of %d entries, %.1f ms of %d (%.1f times); "
          "without unique %.1f ms" % (small * 1e3, SMALL, large * 1e3, LARGE + 3,
                                      large / small, plain * 1e3))
    assert len(everything) == LARGE + 3
    assert len(found) == LARGE
    assert [e[2] for e in found[-4:]] == ["x = %d" % (LARGE - 1), "x = 0", "x = 1", "x = 2"]
    assert [e[1] for e in found[-3:]] == [LARGE + 1, LARGE + 2, LARGE + 3]
    assert large / small < MAX_GROWTH, (small, large)
    # and "unique" costs little more than the search itself
    assert large < 4 * plain, (large, plain)
