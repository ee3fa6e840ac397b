"""Fixtures shared by the integration tests (their helpers are in
sandpit_testing.py, re-exported here for tests that import them from conftest).

Every test drives the real binary the way users do: a kernelspec is installed
with `sandpit install --prefix` into a temporary Jupyter data folder, and
jupyter_client's KernelManager starts kernels from it. SANDPIT_BIN names the
binary under test (the Makefile sets it; by default build/sandpit).
"""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from sandpit_testing import (SANDPIT, TIMEOUT, Kernel, install_spec, start,  # noqa: E402,F401
                             stdout_of, stop)


_BASE = None


def pytest_configure(config):
    """Installs the default sandpit kernelspec into a temporary Jupyter data
    folder first on JUPYTER_PATH, before any test (unittest classes such as the
    conformance suite start kernels in setUpClass, before fixtures run)."""
    global _BASE
    _BASE = tempfile.mkdtemp(prefix="sandpit-tests-")
    subprocess.run([SANDPIT, "install", "--prefix", _BASE], check=True,
                   stdout=subprocess.DEVNULL)
    os.environ["JUPYTER_PATH"] = os.path.join(_BASE, "share", "jupyter")
    # Keep the runtime files (connection files), the history's database and the
    # caches of test kernels out of the home folder.
    os.environ["JUPYTER_RUNTIME_DIR"] = os.path.join(_BASE, "runtime")
    os.environ["JUPYTER_DATA_DIR"] = os.path.join(_BASE, "data")
    os.environ["XDG_CACHE_HOME"] = os.path.join(_BASE, "cache")


def pytest_unconfigure(config):
    if _BASE:
        shutil.rmtree(_BASE, ignore_errors=True)


@pytest.fixture(scope="session")
def jupyter_dir():
    """The Jupyter data prefix with the default sandpit kernelspec."""
    return pathlib.Path(_BASE)


@pytest.fixture(scope="module")
def kernel(jupyter_dir, tmp_path_factory):
    """One kernel for a test module (state is shared between its tests)."""
    k = start("sandpit", cwd=str(tmp_path_factory.mktemp("ws")))
    yield k
    stop(k)


@pytest.fixture
def fresh_kernel(jupyter_dir, tmp_path):
    """A kernel of its own for one test, started in tmp_path."""
    k = start("sandpit", cwd=str(tmp_path))
    yield k
    stop(k)


@pytest.fixture
def kernel_with(jupyter_dir, tmp_path):
    """Starts kernels from a kernelspec with the given options:
    kernel_with("--timeout", "2") -> Kernel. Each is stopped after the test."""
    started = []

    def make(*args, cwd=None):
        name = install_spec(jupyter_dir, *args)
        k = start(name, cwd=str(cwd or tmp_path))
        started.append(k)
        return k
    yield make
    for k in started:
        stop(k)
