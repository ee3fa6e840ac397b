"""Unit tests of the request's state (kernel/python/sandpit/request.py) and of
input() (streams.py): what belongs to one request stays with it, in the thread
that handles it and in the threads that request starts."""

import os
import queue
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "kernel", "python"))

from sandpit import link, request, streams  # noqa: E402

WAIT = 10  # seconds any one step may take


def make(msg_id, shell="", allow_stdin=False, **fields):
    frame = {"type": link.REQUEST, "shell": shell, "msg_type": "execute_request",
             "header": {"msg_id": msg_id},
             "content": {"code": "", "allow_stdin": allow_stdin}}
    frame.update(fields)
    return request.Request(frame)


@pytest.fixture
def sent():
    """Frames sent to the supervisor, as a queue."""
    frames = queue.Queue()
    link.set_sink(lambda obj, buffers: frames.put(obj))
    yield frames
    link.set_sink(None)


def test_a_request_reads_its_frame():
    req = make("m1", shell="s1", allow_stdin=True, execution_count=4, silent=True,
               timeout=2.5, max_output=1000, metadata={"cellId": "c"})
    assert (req.msg_id, req.shell, req.allow_stdin, req.execution_count, req.silent,
            req.timeout, req.max_output, req.metadata) == \
        ("m1", "s1", True, 4, True, 2.5, 1000, {"cellId": "c"})
    odd = request.Request({"header": None, "content": "x", "timeout": "2",
                           "max_output": -5, "execution_count": True})
    assert (odd.msg_id, odd.content, odd.allow_stdin, odd.timeout, odd.max_output,
            odd.execution_count) == ("", {}, False, 0.0, 0, 0)
    assert not make("m2", allow_stdin="yes").allow_stdin


def test_the_current_request_is_per_thread_and_ends_with_its_reply():
    main = make("main")
    token = request.begin(main)
    seen = {}

    def subshell():
        seen["before"] = request.current()
        sub = make("sub", shell="s1")
        t = request.begin(sub)
        seen["during"] = request.current_tag()
        request.end(sub, t)
        seen["after"] = request.current()
    thread = threading.Thread(target=subshell)
    thread.start()
    thread.join(WAIT)
    assert request.current() is main and request.running("main") is main
    request.end(main, token)
    assert request.current() is None and request.running("main") is None
    assert not main.active and not request.add_payload({"source": "page"})
    # the subshell's thread was not started by a request: it had none of its own
    assert seen == {"before": None, "during": "sub", "after": None}


@pytest.fixture
def inheriting(monkeypatch):
    """Threads inherit their starter's context, as in the worker, for one test."""
    monkeypatch.setattr(threading.Thread, "start", threading.Thread.start)
    monkeypatch.setattr(threading.Thread, "_bootstrap_inner",
                        threading.Thread._bootstrap_inner)
    request.inherit_into_threads()


def test_a_thread_started_by_a_cell_belongs_to_that_cell(inheriting):
    cell = make("cell")
    token = request.begin(cell)
    seen = queue.Queue()
    try:
        threading.Thread(target=lambda: seen.put(request.current())).start()
    finally:
        request.end(cell, token)
    assert seen.get(timeout=WAIT) is cell


def test_the_interrupt_note_waits_for_its_request():
    req = make("m")
    assert req.note() is None
    threading.Timer(0.05, req.take_note, [{"reason": "timeout", "limit": 1}]).start()
    assert req.note(wait=WAIT) == {"reason": "timeout", "limit": 1}


def test_input_permission_belongs_to_the_request(sent):
    """A request whose client takes no input, begun in another thread while
    one that does waits for its answer, takes nothing away from it."""
    main = make("main", allow_stdin=True)
    answers = queue.Queue()

    def main_cell():
        token = request.begin(main)
        try:
            answers.put(streams.input("first? "))
            answers.put(streams.input("second? "))
        except BaseException as e:
            answers.put(e)
        finally:
            request.end(main, token)
    thread = threading.Thread(target=main_cell)
    thread.start()
    assert sent.get(timeout=WAIT) == link.input_request("main", "first? ", False)

    sub = make("sub", shell="s1", allow_stdin=False)
    token = request.begin(sub)
    with pytest.raises(streams.StdinNotImplementedError, match="allow_stdin is false"):
        streams.input("x")
    request.end(sub, token)

    request.running("main").give_input({"value": "one"})
    assert answers.get(timeout=WAIT) == "one"
    assert sent.get(timeout=WAIT) == link.input_request("main", "second? ", False)
    main.give_input({"value": 2})
    assert answers.get(timeout=WAIT) == "2"
    thread.join(WAIT)


def test_input_outside_a_request_is_refused(sent):
    with pytest.raises(streams.StdinNotImplementedError, match="no cell is running"):
        streams.input("x")
    assert sent.empty()


def test_input_ends_when_its_request_does(sent):
    req = make("m", allow_stdin=True)
    got = queue.Queue()

    def ask():
        try:
            got.put(req.ask_input("p", False))
        except EOFError as e:
            got.put(e)
    threading.Thread(target=ask).start()
    sent.get(timeout=WAIT)
    req.end()
    assert isinstance(got.get(timeout=WAIT), EOFError)
    with pytest.raises(EOFError):
        req.ask_input("again", False)


def test_publish_is_parented_to_the_current_request(sent):
    token = request.begin(make("cell"))
    request.publish("display_data", {"data": {}})
    request.end(request.current(), token)
    request.publish("clear_output", {"wait": False})
    assert sent.get(timeout=WAIT) == link.iopub("display_data", {"data": {}}, "cell")
    assert sent.get(timeout=WAIT) == link.iopub("clear_output", {"wait": False})
