"""jupyter console, the terminal client, driven under tmux as a person would:
typed lines, multi-line input (the console asks is_complete_request), errors,
persistent variables, input() and exit."""

import os
import subprocess
import time
import uuid

import pytest

class Console:
    def __init__(self, env, cwd):
        self.sock = "sandpit-" + uuid.uuid4().hex[:8]
        self.tmux(["new-session", "-d", "-s", "c", "-x", "160", "-y", "60",
                   "/usr/bin/python3 -m jupyter_console --kernel sandpit"], env=env, cwd=cwd)

    def tmux(self, args, **kw):
        return subprocess.run(["tmux", "-L", self.sock] + args, check=True,
                              stdout=subprocess.PIPE, text=True, **kw).stdout

    def screen(self):
        return self.tmux(["capture-pane", "-p", "-S", "-200", "-t", "c"])

    def wait_for(self, text, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.screen()
            if text in s:
                return s
            time.sleep(0.1)
        raise AssertionError("%r never appeared on the console:\n%s" % (text, self.screen()))

    def type(self, line):
        """Types a line and waits until the console has dealt with it (its screen
        stops changing): keys typed while the console waits for an
        is_complete_reply can trip jupyter_console's event loop."""
        before = self.screen()
        self.tmux(["send-keys", "-t", "c", "-l", line])
        self.tmux(["send-keys", "-t", "c", "Enter"])
        deadline = time.monotonic() + 20
        last, stable_since = None, time.monotonic()
        while time.monotonic() < deadline:
            s = self.screen()
            if s != last:
                last, stable_since = s, time.monotonic()
            elif s != before and time.monotonic() - stable_since > 0.3:
                return
            time.sleep(0.05)

    def ended(self, timeout=20):
        """Waits until the console has quit (its tmux session is gone)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if subprocess.run(["tmux", "-L", self.sock, "has-session", "-t", "c"],
                              stderr=subprocess.DEVNULL).returncode != 0:
                return True
            time.sleep(0.1)
        return False

    def close(self):
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], stderr=subprocess.DEVNULL)


@pytest.fixture
def console(jupyter_dir, tmp_path):
    env = dict(os.environ)
    c = Console(env, str(tmp_path))
    yield c
    c.close()


def test_console_session(console):
    console.wait_for("sandpit")       # the banner
    console.wait_for("In [1]:")
    console.type("x = 5")
    console.wait_for("In [2]:")
    console.type("print(x * 2)")
    s = console.wait_for("In [3]:")
    assert "\n10\n" in s
    # a compound statement: the console keeps reading until a blank line
    console.type("for i in range(3):")
    console.wait_for("...:")
    console.type("print('line', i)")
    console.type("")
    s = console.wait_for("In [4]:")
    assert "line 0" in s and "line 2" in s
    console.type("1/0")
    s = console.wait_for("In [5]:")
    assert "ZeroDivisionError" in s and "division by zero" in s
    console.type("x + 37")
    s = console.wait_for("Out[5]: 42")
    console.type("name = input('Name? ')")
    console.wait_for("\nName?")  # the prompt itself, not the line typed above
    console.type("Ada")
    console.wait_for("In [7]:")
    console.type("print('hello', name)")
    console.wait_for("hello Ada")
    # exit, as in IPython: the kernel asks the console to end the session (an
    # ask_exit payload), and the console quits, taking its tmux session along
    console.tmux(["send-keys", "-t", "c", "-l", "exit"])
    console.tmux(["send-keys", "-t", "c", "Enter"])
    assert console.ended(), console.screen()
