"""matplotlib's font list outlives the kernel: the supervisor keeps it in the
user's cache folder (a folder per workspace) and gives it to the next kernel's
worker in that workspace, so the first chart of a session does not rebuild
it."""

import glob
import os

from sandpit_testing import start, stop


def test_font_list_is_kept_for_the_next_kernel(jupyter_dir, tmp_path):
    cache = os.path.join(os.environ["XDG_CACHE_HOME"], "sandpit", "matplotlib")
    for old in glob.glob(os.path.join(cache, "*", "fontlist-*.json")):
        os.unlink(old)
    k = start("sandpit", cwd=str(tmp_path))
    try:
        k.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")
    finally:
        stop(k)
    kept = glob.glob(os.path.join(cache, "*", "fontlist-*.json"))
    assert len(kept) == 1
    k = start("sandpit", cwd=str(tmp_path))
    try:
        # before matplotlib is imported, the worker's config folder has the list
        given = k.value("sorted(os.path.basename(p) for p in __import__('glob').glob("
                        "os.environ['MPLCONFIGDIR'] + '/fontlist-*.json'))"
                        .replace("os.", "__import__('os')."))
        assert given == repr([os.path.basename(kept[0])])
        assert k.value("'matplotlib' in __import__('sys').modules") == "False"
    finally:
        stop(k)
