"""The worker template: a process that starts Python and imports the runtime
once, then forks each new worker, which confines itself. It is started when a
kernel first replaces its worker (a crash, a restart in place), beside the
exec'd worker that replaces it. What must hold: from then on, every worker
comes from it and is the supervisor's own child; once a forked worker is ready,
the next one is started and waits, confined and warmed up, to take over at the
next restart or crash; workers forked from one template do not share
their random numbers; the template imports nothing from where the user's code
can write; and without a template (--template off, or one that died) workers
are exec'd as before, and nothing else changes."""

import os
import pathlib
import re
import signal
import time

from sandpit_testing import TIMEOUT, install_spec, start, stop


def proc_stat(pid):
    """(comm, ppid) of a process, from /proc."""
    text = pathlib.Path("/proc/%d/stat" % pid).read_text()
    comm = text[text.index("(") + 1:text.rindex(")")]
    return comm, int(text[text.rindex(")") + 2:].split()[1])


def children(pid):
    """{child pid: comm} of a process."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                comm, ppid = proc_stat(int(entry))
            except (OSError, ValueError):
                continue
            if ppid == pid:
                out[int(entry)] = comm
    return out


def crash(k):
    """Kills the worker from inside and waits for the next one to answer."""
    msg_id = k.kc.execute("import os; os.abort()")
    assert k.shell_reply(msg_id)["content"]["ename"] == "WorkerDied"
    k.iopub_until_idle(msg_id)


def logged(path, pattern):
    return re.findall(pattern, pathlib.Path(path).read_text(), re.M)


FDS = """import os
held = []
for fd in os.listdir('/proc/self/fd'):
    try:
        held.append((int(fd), os.readlink('/proc/self/fd/' + fd).split(':')[0]))
    except OSError:
        pass  # listdir's own
print(sorted(held))"""


def template_ready(log):
    """Waits until the kernel's log says the template is ready; its pid."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = logged(log, r"the worker template (\d+) is ready in \d+ ms$")
        if found:
            return int(found[0])
        assert time.monotonic() < deadline, "the template never became ready"
        time.sleep(0.02)


def started(jupyter_dir, tmp_path, *options):
    log = tmp_path / "kernel.log"
    ws = tmp_path / "ws"
    ws.mkdir()
    with open(log, "wb") as f:
        k = start(install_spec(jupyter_dir, "--log-level", "debug", *options),
                  cwd=str(ws), stderr=f)
    return k, log


def test_workers_after_the_first_replacement_are_forked(jupyter_dir, tmp_path):
    k, log = started(jupyter_dir, tmp_path)
    try:
        supervisor = k.km.provisioner.pid
        # a kernel that never replaces its worker has no template
        k.run("x = 1")
        execd_fds = k.run(FDS)
        assert list(children(supervisor).values()) == ["sandpit-worker"]
        crash(k)
        template = template_ready(log)
        assert k.run("print('exec')") == "exec\n"
        pids = []
        for _ in range(2):
            crash(k)
            worker = int(k.value("__import__('os').getpid()"))
            pids.append(worker)
            # the supervisor's child (it reaps it and sees it stop), under its name
            assert proc_stat(worker) == ("sandpit-worker", supervisor)
            # beside the template, and the worker started for the next restart
            kids = children(supervisor)
            assert kids.pop(template) == "sandpit-tmpl" and kids.pop(worker)
            assert len(kids) <= 1  # (named as the template for its first instants)
            # the cell runs where it always did, holding what an exec'd worker holds
            assert k.value("__import__('os').getcwd()") == repr(str(tmp_path / "ws"))
            assert k.run(FDS) == execd_fds
        assert len(set(pids)) == 2
    finally:
        stop(k)
    # the two forked workers, and the one started for a third restart (whose
    # log is relayed while it waits, if it has begun)
    assert len(logged(log, r"^worker\| .* start-up: forked from the template")) in (2, 3)
    assert len(logged(log, r"^worker\| .* start-up: Python and the runtime")) == 2
    assert logged(log, r"started the worker template (\d+)$") == [str(template)]
    assert not logged(log, r"workers are started without it")


def test_workers_of_one_template_draw_different_numbers(jupyter_dir, tmp_path):
    """Forked from one interpreter, each worker must still seed its own random
    numbers (as a new process does), unless --seed asks for the same ones."""
    k, log = started(jupyter_dir, tmp_path)
    crash(k)
    template_ready(log)
    crash(k)
    drawn = []
    for _ in range(2):
        drawn.append(k.value("(__import__('random').random(), "
                             "__import__('uuid').uuid4().hex)"))
        crash(k)
    stop(k)
    assert len(logged(log, r"^worker\| .* start-up: forked from the template")) >= 2
    a, b = (eval(d) for d in drawn)
    assert a[0] != b[0] and a[1] != b[1]


def test_the_template_imports_nothing_the_code_can_write(jupyter_dir, tmp_path):
    """PYTHONPATH (here a folder inside the workspace) is put on sys.path by each
    worker once it is confined, never by the template, which is not: a
    sitecustomize there is not run by anyone, and a module there is found by
    cells as before."""
    ws = tmp_path / "ws"
    (ws / "lib").mkdir(parents=True)
    (ws / "lib" / "sitecustomize.py").write_text(
        "open(%r, 'w').write('ran')\n" % str(ws / "lib" / "ran.txt"))
    (ws / "lib" / "mine.py").write_text("VALUE = 42\n")
    name = install_spec(jupyter_dir, "--log-level", "debug")
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = "lib"
    log = tmp_path / "kernel.log"
    try:
        with open(log, "wb") as f:
            k = start(name, cwd=str(ws), stderr=f)
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old
    try:
        assert k.value("__import__('mine').VALUE") == "42"
        assert k.value("__import__('os').environ['PYTHONPATH']") == "'lib'"
        assert k.value("__import__('sys').path[1]") == repr(str(ws / "lib"))
        crash(k)
        template_ready(log)
        crash(k)
        assert k.value("__import__('mine').VALUE") == "42"
        assert k.value("__import__('sys').path[1]") == repr(str(ws / "lib"))
    finally:
        stop(k)
    assert logged(log, r"^worker\| .* start-up: forked from the template")
    assert not (ws / "lib" / "ran.txt").exists()


def test_without_the_template_workers_are_execd(jupyter_dir, tmp_path):
    k, log = started(jupyter_dir, tmp_path, "--template", "off")
    try:
        supervisor = k.km.provisioner.pid
        k.run("x = 1")
        for _ in range(2):
            crash(k)
            assert k.run("print('after')") == "after\n"
            assert list(children(supervisor).values()) == ["sandpit-worker"]
    finally:
        stop(k)
    assert not logged(log, r"forked from the template|started the worker template")
    assert len(logged(log, r"^worker\| .* start-up: Python and the runtime")) == 3


def test_a_template_that_dies_leaves_workers_execd(jupyter_dir, tmp_path):
    k, log = started(jupyter_dir, tmp_path)
    try:
        supervisor = k.km.provisioner.pid
        crash(k)
        template = template_ready(log)
        k.run("x = 1")
        assert children(supervisor)[template] == "sandpit-tmpl"
        os.kill(template, signal.SIGKILL)
        deadline = time.monotonic() + TIMEOUT
        while "sandpit-tmpl" in children(supervisor).values():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # the running worker is not the template's to lose
        assert k.value("x") == "1"
        # (nor one started beforehand from it, which may take over once)
        for _ in range(2):
            crash(k)
            assert k.run("print('served')") == "served\n"
        assert list(children(supervisor).values()) == ["sandpit-worker"]
    finally:
        stop(k)
    text = log.read_text()
    death = text.index("the worker template was killed by signal 9; workers are started "
                       "without it from now on")
    # after the death and the one that may have waited, workers are exec'd
    starts = re.findall(r"^worker\| .* start-up: (forked from the template|Python and the "
                        r"runtime)", text[death:], re.M)
    assert starts[-1] == "Python and the runtime"
    assert starts.count("forked from the template") <= 1


def spare_started(log, taken):
    """Waits for the kernel's log to say a worker was started beforehand, other
    than those in taken (that have taken over since); its pid."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = [int(p) for p in
                 logged(log, r"started worker (\d+) beforehand, for the next restart$")
                 if int(p) not in taken]
        if found:
            return found[-1]
        assert time.monotonic() < deadline, "no worker was started beforehand"
        time.sleep(0.02)


def running(k):
    return int(k.value("__import__('os').getpid()"))


def test_a_worker_waits_ready_for_the_next_restart(jupyter_dir, tmp_path):
    k, log = started(jupyter_dir, tmp_path)
    try:
        supervisor = k.km.provisioner.pid
        crash(k)
        template = template_ready(log)
        crash(k)  # once a worker is ready, the next one starts
        worker = running(k)
        spare = spare_started(log, {worker})
        assert children(supervisor) == {template: "sandpit-tmpl", worker: "sandpit-worker",
                                        spare: "sandpit-worker"}
        # its log is relayed while it waits: it is confined and warmed up
        deadline = time.monotonic() + TIMEOUT
        while not logged(log, r"^worker\| .* start-up: warmed up"):
            assert time.monotonic() < deadline, "the worker started beforehand never got ready"
            time.sleep(0.02)
        k.run("y = 2")
        crash(k)
        # the spare took over: a new worker, with nothing of the old one's
        assert running(k) == spare
        assert k.value("'y' in globals()") == "False"
        assert logged(log, r"worker %d, started beforehand, takes over$" % spare)
        # and the next one is started in turn
        following = spare_started(log, {worker, spare})
        deadline = time.monotonic() + TIMEOUT
        while proc_stat(following) != ("sandpit-worker", supervisor):  # reparented, named
            assert time.monotonic() < deadline, proc_stat(following)
            time.sleep(0.01)
    finally:
        stop(k)
    # the one left waiting ends with the kernel
    deadline = time.monotonic() + TIMEOUT
    while os.path.exists("/proc/%d" % following) and proc_stat(following)[1] == supervisor:
        assert time.monotonic() < deadline, "the worker started beforehand outlived its kernel"
        time.sleep(0.05)


def test_a_worker_started_beforehand_that_dies_is_not_used(jupyter_dir, tmp_path):
    k, log = started(jupyter_dir, tmp_path)
    try:
        crash(k)
        template_ready(log)
        crash(k)
        worker = running(k)
        spare = spare_started(log, {worker})
        os.kill(spare, signal.SIGKILL)
        deadline = time.monotonic() + TIMEOUT
        while not logged(log, r"worker %d, started beforehand, ended before it was "
                              r"needed$" % spare):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        crash(k)
        assert k.run("print('served')") == "served\n"
        assert running(k) not in (worker, spare)
    finally:
        stop(k)
    assert not logged(log, r"worker %d, started beforehand, takes over" % spare)


def test_no_worker_is_started_beforehand_with_preloads(jupyter_dir, tmp_path):
    """A preload is the user's code, run when a worker starts: one started
    beforehand would run it before the restart that asked for it."""
    k, log = started(jupyter_dir, tmp_path, "--preload", "json")
    try:
        supervisor = k.km.provisioner.pid
        crash(k)
        template = template_ready(log)
        crash(k)
        crash(k)
        worker = running(k)
        assert children(supervisor) == {template: "sandpit-tmpl", worker: "sandpit-worker"}
    finally:
        stop(k)
    assert len(logged(log, r"^worker\| .* start-up: forked from the template")) == 2
    assert not logged(log, r"beforehand")
