"""ipykernel's own tests/test_message_spec.py, as Debian installs it, run
unmodified against sandpit.

Its tests are taken into this module by name and run on the kernel its own
helpers start (ipykernel.tests.utils.start_global_kernel), with one change: the
kernel they start is sandpit, from the kernelspec the test suite installs, in
a workspace of its own. Tests that hold sandpit to ipykernel's own version
numbers are left out, each with its reason (EXCLUDED). When the file is not
installed, test_ipykernel_tests_are_installed fails and says so, rather than
this module passing with nothing run.
"""

import atexit
import types

import pytest

SPEC_FILE = "/usr/lib/python3/dist-packages/ipykernel/tests/test_message_spec.py"

try:
    from ipykernel.tests import test_message_spec as spec
    from ipykernel.tests import utils
except ImportError as e:
    spec = utils = None
    MISSING = "ipykernel.tests.test_message_spec cannot be imported (%s)" % e
else:
    MISSING = None

# name -> why it does not apply to sandpit.
EXCLUDED = {
    "test_kernel_info_request":
        "holds implementation_version to ipykernel's own (at least 2.1); sandpit "
        "reports its own version",
}


def test_ipykernel_tests_are_installed():
    assert MISSING is None, (
        "ipykernel's tests/test_message_spec.py is not installed, so it was not run "
        "against sandpit: %s. Debian 12's python3-ipykernel ships it as %s (make "
        "deps installs that package)." % (MISSING, SPEC_FILE))


def _taken(name, func):
    """A test of ipykernel's under this module, on the same code and globals (so
    it reads the KC that its module's setup set); excluded ones are skipped."""
    copy = types.FunctionType(func.__code__, func.__globals__, name, func.__defaults__,
                              func.__closure__)
    copy.__doc__ = func.__doc__
    copy.__dict__.update(func.__dict__)
    if name in EXCLUDED:
        copy = pytest.mark.skip(reason=EXCLUDED[name])(copy)
    return copy


if spec is not None:
    # In the order of their file, as they run under ipykernel.
    for _name, _func in list(vars(spec).items()):
        if _name.startswith("test_") and isinstance(_func, types.FunctionType):
            globals()[_name] = _taken(_name, _func)
    del _name, _func


@pytest.fixture(scope="module", autouse=True)
def sandpit_as_their_kernel(jupyter_dir, tmp_path_factory):
    """Runs their module's setup() with their start_new_kernel pointed at
    sandpit, and stops that kernel after the module's last test."""
    if spec is None:
        yield
        return
    workspace = str(tmp_path_factory.mktemp("ws"))
    theirs = utils.start_new_kernel

    def start_sandpit(**kwargs):
        kwargs.setdefault("kernel_name", "sandpit")
        kwargs.setdefault("cwd", workspace)
        return theirs(**kwargs)

    patch = pytest.MonkeyPatch()
    patch.setattr(utils, "start_new_kernel", start_sandpit)
    try:
        spec.setup()
        # Their tests would pass on ipykernel too: be sure it is sandpit they test.
        assert utils.KM.kernel_name == "sandpit"
        assert utils.KM.kernel_spec.argv[0].endswith("sandpit"), utils.KM.kernel_spec.argv
        yield
    finally:
        if utils.KM is not None:
            atexit.unregister(utils.stop_global_kernel)
            utils.stop_global_kernel()
        patch.undo()
