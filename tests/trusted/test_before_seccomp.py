"""Nothing from the workspace runs before the seccomp filter (issue 27).

Between Python's start and the filter, a worker imports its preloads and sets
up its runtime; a module the cell left in the workspace and found on the way
would run there, free to fork and exec. The workspace goes on sys.path only
once that is over. Each planted module records whether a filter was in force
when it ran (the Seccomp field of /proc/self/status); the kernel is restarted
in place and after a crash, and no record may say "no filter".
"""

import os

from sandpit_testing import TIMEOUT, install_spec, start, stop

# random: imported by the runtime's set-up with --seed; helpers: a preload's name;
# sitecustomize and usercustomize: what Python's site imports at start.
PLANTED = ("random", "helpers", "sitecustomize", "usercustomize")

PLANT = r"""
for _name in %r:
    open(_name + ".py", "w").write('''
for _l in open("/proc/self/status"):
    if _l.startswith("Seccomp:"):
        with open("ran-%%s-%%d.txt" %% (__name__, __import__("os").getpid()), "w") as _f:
            _f.write(_l.split()[1])
''')
""" % (PLANTED,)


def restart_in_place(k):
    msg = k.kc.session.msg("shutdown_request", {"restart": True},
                           metadata={"sandpit": {"in_place": True}})
    k.kc.control_channel.send(msg)
    reply = k.kc.get_control_msg(timeout=TIMEOUT)
    assert reply["content"] == {"status": "ok", "restart": True}


def records(ws):
    out = {}
    for name in os.listdir(ws):
        if name.startswith("ran-"):
            with open(os.path.join(ws, name)) as f:
                out[name] = f.read()
    return out


def test_workspace_modules_run_only_under_the_filter(jupyter_dir, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    name = install_spec(jupyter_dir, "--seed", "1", "--preload", "helpers")
    k = start(name, cwd=str(ws))
    try:
        k.run(PLANT)
        restart_in_place(k)
        assert k.run("print(1)") == "1\n"
        k.execute("import os\nos.abort()")
        assert k.run("print(2)") == "2\n"
        # the runtime still seeds: random is the system's, seeded
        assert k.run("import os, random\n"
                     "print(random.__file__ != os.path.abspath('random.py'))") == "True\n"
        # a cell may still import from its workspace, under the filter
        k.run("import helpers")
    finally:
        stop(k)
    found = records(ws)
    assert not {n: v for n, v in found.items() if v != "2"}, found
    assert any(n.startswith("ran-helpers-") for n in found), found
