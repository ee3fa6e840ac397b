"""How `sandpit serve` refuses: with an HTTP status that says why, on the
WebSocket upgrade as on REST (401 without the token, 403 from a foreign
origin, 404 for a kernel it does not have: clients tell these from a network
failure, and a load balancer that tries the instances in turn, as
docs/gateway.md's does, from an instance that is down), and 400 for a
request whose KERNEL_* values are not strings. test_gateway_hostile.py and
test_gateway_websocket.py check that these are refused at all."""

import uuid

import pytest
import websocket

from .test_gateway_hostile import (UNAUTHORISED, UPGRADES_WITHOUT_TOKEN, canary,  # noqa: F401
                                   post_raw, refused_upgrade, sandpit_only, status_of)


@pytest.mark.parametrize("query,header", UPGRADES_WITHOUT_TOKEN)
def test_websocket_upgrade_without_the_token_says_so(serve, canary, query, header):
    """The refusal is an HTTP status, as for REST: clients tell it from a
    network failure, and a load balancer from an instance that is down."""
    url = "%s/api/kernels/%s/channels%s" % (serve.ws_base, canary, query)
    assert refused_upgrade(url, header=[header] if header else []) == UNAUTHORISED


def test_websocket_upgrade_from_a_foreign_origin_says_so(serve, canary):
    sandpit_only("it lets a token-authenticated request through from any origin")
    url = "%s/api/kernels/%s/channels?token=%s" % (serve.ws_base, canary, serve.token)
    assert refused_upgrade(url, origin="http://evil.example") == 403


def test_kernel_env_values_must_be_strings(serve):
    before = len(serve.kernels())
    body = b"{\"name\": \"sandpit\", \"env\": {\"KERNEL_X\": 5}}"
    status = status_of(post_raw(serve, body))
    assert status == 400, status
    assert len(serve.kernels()) == before


def test_bad_kernel_id_is_a_404(serve):
    """As Jupyter Server answers it (and as a load balancer that tries the
    instances in turn expects: docs/gateway.md)."""
    for bad in (str(uuid.uuid4()), "not-a-uuid"):
        with pytest.raises(websocket.WebSocketBadStatusException) as e:
            serve.ws(bad)
        assert e.value.status_code == 404
