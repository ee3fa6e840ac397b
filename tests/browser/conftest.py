"""End-to-end tests in a real browser: a Jupyter Notebook server (the classic
Notebook 6, Debian's jupyter-notebook) started on 127.0.0.1 with the sandpit
kernelspec that tests/conftest.py installs (JUPYTER_PATH), and headless
Chromium driven by selenium opening its notebooks.

Fixtures:
  notebook_server  one server per test module, serving a temporary folder
  browser          one headless Chromium per test module
  page             a NotebookPage for one test; on failure it saves a
                   screenshot (and the page's HTML) into the test's tmp_path
                   and prints the server's log and the browser's console
"""

import json
import os
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

PYTHON = "/usr/bin/python3"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1280,1400")
SERVER_START = 30  # seconds for the server to answer /api/status
WAIT = 30  # seconds for anything in the page (kernel ready, outputs)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NotebookServer:
    """`python3 -m notebook` in a subprocess, its log in a file; extra_args
    are more of its options (--gateway-url=..., say)."""

    def __init__(self, root, extra_args=()):
        self.root = root
        self.dir = root / "notebooks"
        self.dir.mkdir()
        self.port = _free_port()
        self.token = secrets.token_hex(24)
        self.log_path = root / "server.log"
        env = dict(os.environ)
        # JUPYTER_PATH (the sandpit kernelspec first) comes from tests/conftest.py;
        # the server's own files stay in the temporary folder, not the home folder.
        # (The system-wide configuration in /etc/jupyter, which enables the
        # widgets' extension, still applies.)
        assert "JUPYTER_PATH" in env, "tests/conftest.py sets JUPYTER_PATH"
        for var, sub in (("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_DATA_DIR", "data"),
                         ("JUPYTER_CONFIG_DIR", "config"), ("IPYTHONDIR", "ipython")):
            (root / sub).mkdir()
            env[var] = str(root / sub)
        argv = [PYTHON, "-m", "notebook", "--no-browser", "--ip=127.0.0.1",
                "--port=%d" % self.port, "--port-retries=0",
                "--NotebookApp.token=" + self.token, "--NotebookApp.password=",
                "--notebook-dir=" + str(self.dir), *extra_args]
        if os.geteuid() == 0:
            argv.append("--allow-root")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, env=env, cwd=str(self.dir), stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + SERVER_START
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("the notebook server exited with %s:\n%s"
                                   % (self.proc.returncode, self.log()))
            try:
                self.api("GET", "status", timeout=1)
                return
            except (OSError, urllib.error.URLError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("the notebook server did not answer in %d s:\n%s"
                                       % (SERVER_START, self.log()))
                time.sleep(0.1)

    def url(self, path):
        sep = "&" if "?" in path else "?"
        return "http://127.0.0.1:%d/%s%stoken=%s" % (self.port, path.lstrip("/"), sep,
                                                     self.token)

    def api(self, method, path, timeout=10):
        req = urllib.request.Request(self.url("api/" + path), method=method)
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
        return json.loads(body) if body else None

    def kernels(self):
        return self.api("GET", "kernels")

    def shutdown_kernels(self):
        """Shuts down every kernel the server runs, through its API."""
        try:
            for k in self.kernels():
                self.api("DELETE", "kernels/" + k["id"])
        except (OSError, urllib.error.URLError, ValueError) as e:
            print("could not shut down the server's kernels: %s" % e)

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.shutdown_kernels()
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


@pytest.fixture(scope="module")
def notebook_server(jupyter_dir, tmp_path_factory):
    server = NotebookServer(tmp_path_factory.mktemp("nbserver"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument("--user-data-dir=" + str(tmp_path_factory.mktemp("chromium")))
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    yield driver
    driver.quit()


class NotebookPage:
    """A notebook opened in the classic Notebook's page, driven through the
    page's own JS API (Jupyter.notebook) and the DOM."""

    def __init__(self, driver, server):
        self.driver, self.server = driver, server
        self.console_seen = []  # the browser's console entries read so far

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def wait(self, what, condition, timeout=WAIT, details=None):
        """Polls condition(driver) until it is truthy; fails naming `what`
        (and showing details(), when given)."""
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1).until(condition)
        except TimeoutException:
            pass
        more = ""
        if details is not None:
            try:
                more = ": %s" % (details(),)
            except WebDriverException as e:
                more = ": (no details: %s)" % e
        pytest.fail("timed out after %s s waiting for %s%s" % (timeout, what, more))

    def wait_js(self, what, script, *args, timeout=WAIT, details=None):
        return self.wait(what, lambda d: d.execute_script(script, *args), timeout, details)

    def open(self, name):
        """Opens the notebook and waits until its kernel is connected and idle."""
        self.driver.get(self.server.url("notebooks/" + name))
        self.wait_js("the notebook and its kernel to be ready",
                     "return !!(window.Jupyter && Jupyter.notebook"
                     " && Jupyter.notebook._fully_loaded && Jupyter.notebook.kernel"
                     " && Jupyter.notebook.kernel.is_connected()"
                     " && Jupyter.notebook.kernel.info_reply"
                     " && Jupyter.notebook.kernel.info_reply.implementation"
                     " && document.querySelector('#kernel_indicator_icon.kernel_idle_icon'))")

    def kernel_info(self):
        """The kernel_info_reply content the page received from its kernel."""
        return self.js("return Jupyter.notebook.kernel.info_reply")

    # A code cell has finished when the page has had the reply to its request
    # (the prompt shows no '*') and the kernel's idle status for it (so all
    # of its output is in the page). STATE_JS tells where each cell stands.
    DONE_JS = """
    var state = c => {
        var cb = c.last_msg_id && Jupyter.notebook.kernel._msg_callbacks[c.last_msg_id];
        return {prompt: c.input_prompt_number === undefined ? null : c.input_prompt_number,
                sent: !!c.last_msg_id, reply: !cb || !!cb.shell_done,
                idle: !cb || !!cb.iopub_done};
    };
    var done = c => (s => s.sent && s.prompt !== '*' && s.reply && s.idle)(state(c));
    var code = () => Jupyter.notebook.get_cells().filter(c => c.cell_type === 'code');
    """

    def cell_states(self):
        return self.js(self.DONE_JS + "return code().map(state);")

    def wait_all_done(self, timeout=WAIT):
        """Waits until every code cell has been run and has finished."""
        self.wait_js("every code cell to finish",
                     self.DONE_JS + "return code().every(done);", timeout=timeout,
                     details=self.cell_states)

    def run_cell(self, index, timeout=WAIT):
        """Runs the cell at index (as Shift-Enter does), waits until it has
        finished, and returns its element."""
        self.js("Jupyter.notebook.get_cell(arguments[0]).execute();", index)
        self.wait_js("cell %d to finish" % index,
                     self.DONE_JS + "return done(Jupyter.notebook.get_cell(arguments[0]));",
                     index, timeout=timeout,
                     details=lambda: self.js(self.DONE_JS + "return state("
                                             "Jupyter.notebook.get_cell(arguments[0]));", index))
        return self.js("return Jupyter.notebook.get_cell(arguments[0]).element[0]", index)

    def cell_element(self, code_index):
        """The element of the code cell at code_index (counting code cells only)."""
        return self.js("return Jupyter.notebook.get_cells().filter("
                       "c => c.cell_type === 'code')[arguments[0]].element[0]", code_index)

    def leave(self):
        """Leaves the notebook for a blank page and shuts its kernel down."""
        try:
            self.driver.execute_script("window.onbeforeunload = null;")
            self.driver.get("about:blank")
        except WebDriverException as e:
            print("could not leave the page: %s" % e)
        self.server.shutdown_kernels()

    def console(self):
        """The browser console's entries so far (chromedriver hands each out once)."""
        try:
            self.console_seen.extend(self.driver.get_log("browser"))
        except WebDriverException:
            pass
        return self.console_seen

    def wait_console(self, what, *texts, since=0, timeout=WAIT):
        """Waits for a console message (from entry `since` on) that contains
        one of texts; returns that text."""
        def seen(driver):
            for entry in self.console()[since:]:
                for text in texts:
                    if text in entry.get("message", ""):
                        return text
            return None
        return self.wait(what, seen, timeout)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture
def page(request, browser, notebook_server, tmp_path):
    p = NotebookPage(browser, notebook_server)
    yield p
    rep = getattr(request.node, "rep_call", None)
    if rep is None or rep.failed:
        try:
            browser.save_screenshot(str(tmp_path / "screenshot.png"))
            (tmp_path / "page.html").write_text(browser.page_source)
        except WebDriverException as e:
            print("no screenshot: %s" % e)
        print("screenshot and page: %s" % tmp_path)
        print("--- browser console ---")
        for entry in p.console():
            print("%s %s" % (entry.get("level"), entry.get("message")))
        print("--- notebook server log (%s) ---\n%s" % (notebook_server.log_path,
                                                       notebook_server.log()))
    # The next test starts from a blank page, without this test's kernel.
    p.leave()
