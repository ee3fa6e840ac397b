"""Fixtures of the gateway's tests: `sandpit serve` (the binary under test,
SANDPIT_BIN) on 127.0.0.1 with a token, serving the kernelspecs that
tests/conftest.py installs, in a temporary folder. gateway_testing.py has the
processes and the WebSocket client."""

import pytest

from .gateway_testing import gateway


@pytest.fixture(scope="module")
def serve(jupyter_dir, tmp_path_factory):
    """One `sandpit serve` for a test module; on the way out it must still be
    running (a test that crashed it fails here)."""
    server = gateway(tmp_path_factory.mktemp("serve"))
    yield server
    alive = server.alive()
    server.stop()
    assert alive, "the server died:\n" + server.log()


@pytest.fixture
def serve_with(jupyter_dir, tmp_path_factory):
    """Starts a `sandpit serve` of its own with more options:
    serve_with("--max-kernels", "3")."""
    started = []

    def make(*args):
        server = gateway(tmp_path_factory.mktemp("serve"), *args)
        started.append(server)
        return server
    yield make
    for server in started:
        server.stop()
