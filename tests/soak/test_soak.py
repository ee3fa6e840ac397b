"""The short soak in `make test` (tests/soak/soak.py has the long one, `make soak`):
1,250 mixed cells through one kernel, with a crash of the worker half-way through
each thousand, every reply and output checked.

It holds what a long-lived kernel needs: no descriptor is left behind, by the
supervisor or by a worker, and memory grows no faster than the bounds below. The
bounds are about twice the figures of the run in the README (supervisor +110 to
+290 kB per 1,000 cells once its heap has settled, most of it the history of the
cells; worker about +500 kB, its In and Out), so that a leak of a message per cell
(a kilobyte or more) fails, and the allocator's own noise does not.
"""

from sandpit_testing import start, stop
from soak import SETTLE, soak

SUPERVISOR_KB_PER_1000 = 512
WORKER_KB_PER_1000 = 1024


def test_short_soak(jupyter_dir, tmp_path, capsys):
    k = start("sandpit", cwd=str(tmp_path))
    try:
        s = soak(k, SETTLE + 1000, every=250)
    finally:
        stop(k)
    with capsys.disabled():
        sup = s["supervisor"]
        print("\nshort soak: supervisor %+.0f kB per 1,000 cells, fds %d -> %d; workers %s"
              % (sup["rss_per_1000"], sup["first"]["fds"], sup["last"]["fds"],
                 ["%+.0f kB per 1,000, fds %s" % (w["rss_per_1000"], w["fds"])
                  for w in s["workers"]]))
    assert sup["first"]["fds"] == sup["last"]["fds"], sup
    assert sup["rss_per_1000"] <= SUPERVISOR_KB_PER_1000, sup
    assert len(s["workers"]) == 2, s["workers"]
    for w in s["workers"]:
        assert w["fds"][0] == w["fds"][1], w
        assert w["rss_per_1000"] <= WORKER_KB_PER_1000, w
