"""ipywidgets (Debian 12's, version 6) driven from the client side as a front
end drives it: the kernel opens the widget's model comms and displays its
view; a change from the front end (a slider moved) reaches the kernel-side
value and its observers; a change in the kernel reaches the front end."""

import time

from sandpit_testing import raw_socket




def wait_value(k, expr, want, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = k.value(expr)
        if got == want:
            return got
        time.sleep(0.05)
    return k.value(expr)


def test_int_slider_round_trip(fresh_kernel):
    k = fresh_kernel
    reply, out = k.execute("import ipywidgets as w\n"
                           "slider = w.IntSlider(value=3, min=0, max=100)\n"
                           "seen = []\n"
                           "slider.observe(lambda change: seen.append(change['new']), 'value')\n"
                           "display(slider)")
    assert reply["content"]["status"] == "ok"
    opens = [m for m in out if m["msg_type"] == "comm_open"]
    models = {m["content"]["data"]["_model_name"]: m["content"] for m in opens}
    assert "IntSliderModel" in models
    model = models["IntSliderModel"]
    assert model["target_name"] == "jupyter.widget"
    assert model["data"]["value"] == 3
    comm_id = model["comm_id"]
    views = [m for m in out if m["msg_type"] == "display_data"]
    assert views[-1]["content"]["data"]["application/vnd.jupyter.widget-view+json"] == \
        {"model_id": comm_id}

    # the front end moves the slider
    s = raw_socket(k)
    k.kc.session.send(s, "comm_msg", {"comm_id": comm_id,
                                      "data": {"method": "backbone",
                                               "sync_data": {"value": 42}}})
    assert wait_value(k, "slider.value", "42") == "42"
    assert k.value("seen") == "[42]"

    # the kernel changes it: the front end is told
    msg_id = k.kc.execute("slider.value = 7")
    deadline = time.monotonic() + 10
    update = None
    while update is None and time.monotonic() < deadline:
        m = k.next_iopub(msg_id)
        if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id:
            update = m["content"]["data"]
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    assert update == {"method": "update", "state": {"value": 7}, "buffer_paths": []} or \
        (update["method"] == "update" and update["state"] == {"value": 7})
    k.shell_reply(msg_id)
    s.close()


def test_widget_as_last_expression_shows_its_view(fresh_kernel):
    reply, out = fresh_kernel.execute("import ipywidgets as w\nw.Button(description='go')")
    assert reply["content"]["status"] == "ok"
    kinds = [m["msg_type"] for m in out]
    assert "execute_result" not in kinds
    views = [m for m in out if m["msg_type"] == "display_data"]
    assert views and "application/vnd.jupyter.widget-view+json" in views[-1]["content"]["data"]


def test_get_ipython_is_the_kernels_shell(kernel):
    assert kernel.value("__import__('IPython').get_ipython() is get_ipython()") == "True"
    assert kernel.value("type(get_ipython()).__name__") == "'ZMQInteractiveShell'"
    assert kernel.value("hasattr(get_ipython().kernel, 'comm_manager')") == "True"


def test_widget_front_end_connecting_first_is_answered(fresh_kernel):
    """The front end asks for jupyter.widget.version when it connects, before
    any cell imports ipywidgets: the kernel answers with the version rather
    than closing the comm."""
    import uuid
    k = fresh_kernel
    assert k.value("'ipywidgets' in __import__('sys').modules") == "False"
    s = raw_socket(k)
    comm_id = uuid.uuid4().hex
    k.kc.session.send(s, "comm_open", {"comm_id": comm_id,
                                       "target_name": "jupyter.widget.version", "data": {}})
    deadline = time.monotonic() + 20
    answer = None
    while answer is None and time.monotonic() < deadline:
        m = k.kc.get_iopub_msg(timeout=20)
        if m["msg_type"] in ("comm_msg", "comm_close") and m["content"]["comm_id"] == comm_id:
            answer = m
    assert answer["msg_type"] == "comm_msg"
    assert "version" in answer["content"]["data"]
    s.close()
