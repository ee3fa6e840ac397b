"""Layer 2, guard: clear words for what the sandbox refuses.

The sandbox itself is enforced by the Linux kernel on the worker process
(sandbox/: seccomp, Landlock, namespaces, rlimits): nothing here is a
defence, and code that goes around Python (ctypes calling syscall()) meets
the same refusals. What the kernel says, though, is terse: os.system returns
127 as if the shell were missing, subprocess fails with "[Errno 1] Operation
not permitted", a DNS lookup with "Temporary failure in name resolution".

An audit hook (PEP 578) sees those calls first and refuses them with a
PermissionError that names what was refused and why, before the call is
even tried. It only ever refuses what the sandbox would refuse anyway.
"""

import _socket  # the constants, without the socket module's imports
import os
import sys

_PROGRAMS = ("starting programs is disabled in this kernel's sandbox (no shell, no "
             "subprocess, no os.exec*)")
_PROCESSES = ("new processes are disabled in this kernel's sandbox (threads work: try "
              "threading or concurrent.futures.ThreadPoolExecutor)")
_NETWORK = "network access is disabled in this kernel"

_network_families = {_socket.AF_INET, _socket.AF_INET6}
for _name in ("AF_PACKET", "AF_NETLINK"):
    if hasattr(_socket, _name):
        _network_families.add(getattr(_socket, _name))


def _describe(args):
    def text(a):
        return os.fsdecode(a) if isinstance(a, (bytes, bytearray)) else str(a)
    try:
        if isinstance(args, (list, tuple)):
            return " ".join(text(a) for a in args)
        return text(args)
    except Exception:
        return "?"


def explain(exc):
    """A note for an error that the sandbox or a limit caused, or None."""
    import errno
    env = os.environ
    if isinstance(exc, MemoryError) and env.get("SANDPIT_MEMORY_MIB", "0") != "0":
        return ("sandpit: this kernel's memory limit is %s MiB (--memory)"
                % env["SANDPIT_MEMORY_MIB"])
    if not isinstance(exc, OSError):
        return None
    if exc.errno == errno.EFBIG and env.get("SANDPIT_MAX_FILE_MIB", "0") != "0":
        return ("sandpit: files are limited to %s MiB in this kernel (--max-file)"
                % env["SANDPIT_MAX_FILE_MIB"])
    if env.get("SANDPIT_SANDBOX", "on") != "on":
        return None
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and exc.filename:
        return ("sandpit: this kernel's sandbox lets code write only in its workspace (%s) "
                "and its temporary folder, and read only those and the system's Python and "
                "libraries" % env.get("SANDPIT_WORKSPACE", os.getcwd()))
    if exc.errno == errno.EPERM:
        return ("sandpit: this kernel's sandbox refused a system call: no new processes "
                "or programs, no network or local sockets, no changes of identity, "
                "nothing that reaches other processes")
    return None


def _make_hook(network):
    own_pid = os.getpid()

    def hook(event, args):
        # Most events are none of these: the first test is a set look-up.
        if event not in _EVENTS:
            return
        if event == "os.system":
            raise PermissionError("%s: os.system(%r) was refused"
                                  % (_PROGRAMS, _describe(args[0])))
        if event == "subprocess.Popen":
            raise PermissionError("%s: could not run %r" % (_PROGRAMS, _describe(args[1])))
        if event in ("os.exec", "os.posix_spawn"):
            raise PermissionError("%s: could not run %r" % (_PROGRAMS, _describe(args[0])))
        if event == "os.spawn":  # (mode, path, args, env)
            raise PermissionError("%s: could not run %r" % (_PROGRAMS, _describe(args[1])))
        if event in ("os.fork", "os.forkpty"):
            raise PermissionError("%s: %s() was refused" % (_PROCESSES, event))
        if event in ("os.kill", "os.killpg"):
            if event == "os.killpg" or args[0] != own_pid:
                raise PermissionError("signals to other processes are refused in this "
                                      "kernel's sandbox: %s%r" % (event, tuple(args)))
            return
        if network:
            return
        if event == "socket.__new__":
            if args[1] in _network_families:
                raise PermissionError("%s: sockets for the network cannot be created"
                                      % _NETWORK)
        elif event in ("socket.getaddrinfo", "socket.gethostbyname",
                       "socket.gethostbyname_ex", "socket.gethostbyaddr"):
            raise PermissionError("%s: cannot look up %r" % (_NETWORK, args[0]))
    return hook


_EVENTS = frozenset((
    "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
    "os.forkpty", "os.kill", "os.killpg", "socket.__new__", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr",
))


def install(user_ns):
    """Adds the hook when the sandbox is on (the worker sets SANDPIT_SANDBOX
    and SANDPIT_NETWORK from the kernel's options)."""
    if os.environ.get("SANDPIT_SANDBOX", "on") != "on":
        return
    sys.addaudithook(_make_hook(os.environ.get("SANDPIT_NETWORK", "off") == "on"))
