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

Files cannot be judged beforehand (the workspace's own rules, /dev/null,
the folders given read-only), so a refused file keeps the kernel's error,
and reword() makes its message say why when the error is shown: the file is
outside the workspace, the only folder the kernel may write in, or outside
the folders it may read. The audit hook notes, per thread, which path was
last opened and whether for writing, which tells a refused read from a
refused write when both give "Permission denied". multiprocessing's pools
and queues (which need a semaphore in /dev/shm, read-only, before they even
try to start a process) say that new processes are disabled
(guard_semaphores(), applied by sandpit.import_hooks when multiprocessing
loads).

One refusal cannot be judged first: where no cgroup counts shared memory, the
filter refuses anonymous shared mappings (mmap.mmap(-1, n), whose flags are
MAP_SHARED unless told otherwise), but the audit event of mmap does not carry
the flags. The hook notes where such a mapping was asked for, and explain()
words the PermissionError raised at that very place.
"""

import _socket  # the constants, without the socket module's imports
import errno
import os
import sys
import threading

from . import options

_PROGRAMS = ("starting programs is disabled in this kernel's sandbox (no shell, no "
             "subprocess, no os.exec*)")
_PROCESSES = ("new processes are disabled in this kernel's sandbox (threads work: try "
              "threading or concurrent.futures.ThreadPoolExecutor)")
_NETWORK = "network access is disabled in this kernel"
_SHARED_MEMORY = ("shared memory is refused in this kernel's sandbox, because no cgroup "
                  "can count it against the memory limit on this machine: "
                  "mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE) gives private memory")

# Where in the code an anonymous mapping was last asked for, in this thread: the
# frame's code and instruction, as a traceback records them.
_anonymous_mmap = threading.local()

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


def _unreadable_path_entries():
    """The entries of sys.path that exist but that the sandbox keeps from
    being read (an import there fails as if the module were missing)."""
    found = []
    for entry in sys.path:
        if not isinstance(entry, str) or not entry:
            continue
        try:
            if os.path.isdir(entry):
                os.scandir(entry).close()
            elif os.path.exists(entry):
                open(entry, "rb").close()
        except PermissionError:
            found.append(entry)
        except OSError:
            pass
    return found


def explain(exc):
    """Makes the message of an error that the sandbox or a limit caused say
    so (reword()); returns a note to add for what a message cannot hold, or None. The
    PermissionError of a refused shared mapping is worded in place instead (its
    strerror), so that its message itself says why."""
    reword(exc)
    if isinstance(exc, ModuleNotFoundError) and options.SANDBOX:
        unreadable = _unreadable_path_entries()
        if unreadable:
            return ("sandpit: %s on sys.path cannot be read in this kernel's sandbox, and "
                    "nothing there can be imported: if the module is there, give the "
                    "kernel --venv DIR (a virtual environment) or --read DIR (a folder it "
                    "may read)" % ", ".join(unreadable))
        return None
    if not isinstance(exc, OSError):
        return None
    if exc.errno == errno.EPERM and _raised_by_anonymous_mmap(exc):
        # The message itself, not only a note: agents read evalue.
        exc.strerror = _SHARED_MEMORY
        return None
    if exc.errno == errno.EFBIG and options.MAX_FILE_MIB != "0":
        return ("sandpit: files are limited to %s MiB in this kernel (--max-file)"
                % options.MAX_FILE_MIB)
    if not options.SANDBOX:
        return None
    if exc.errno == errno.EPERM and not exc.filename:
        return ("sandpit: this kernel's sandbox refused a system call: no new processes "
                "or programs, no network or local sockets, no changes of identity, "
                "nothing that reaches other processes")
    return None


_last = threading.local()  # .path, .writing: this thread's last file operation


def _inside(path, folder):
    return bool(folder) and (path == folder or path.startswith(folder.rstrip(os.sep) + os.sep))


def _writing(path):
    """True when this thread's last operation on path wrote, False when it
    read, None when it is not known."""
    last = getattr(_last, "path", None)
    if last is None:
        return None
    try:
        if os.path.abspath(os.fsdecode(last)) != path:
            return None
    except (TypeError, ValueError):
        return None
    return _last.writing


def reword(exc):
    """Says in exc's own message why the sandbox or a limit refused it: a
    file outside the workspace, a MemoryError at the --memory limit. Returns
    True when it did. The error keeps its type, errno and filename."""
    if isinstance(exc, MemoryError):
        limit = options.MEMORY_MIB
        if limit != "0" and not exc.args:
            exc.args = ("the worker could not get more memory within this kernel's limit "
                        "of %s MiB (--memory)" % limit,)
            return True
        return False
    if (not isinstance(exc, OSError) or not options.SANDBOX
            or exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS)
            or exc.filename is None or getattr(exc, "_sandpit_reworded", False)):
        return False
    try:
        path = os.path.abspath(os.fsdecode(exc.filename))
    except (TypeError, ValueError):
        return False
    workspace = options.workspace()
    tmp = os.environ.get("TMPDIR", "")
    if _inside(path, tmp):
        return False
    writing = exc.errno == errno.EROFS or _writing(path)
    if _inside(path, workspace):
        why = _why_refused_inside(path, exc.errno, writing)
        if why is None:
            return False  # the file's own permissions, not the sandbox
    elif writing:
        why = ("outside the workspace: this kernel may write only in its workspace, %s, "
               "and its temporary folder, %s" % (workspace, tmp or "$TMPDIR"))
    elif writing is None:
        why = ("outside the workspace: this kernel may write only in its workspace, %s, "
               "and its temporary folder, and read only those and the folders of Python "
               "and its libraries; %s" % (workspace, _how_to_read(path)))
    else:
        why = ("outside the folders this kernel may read: its workspace, %s, its "
               "temporary folder and the folders of Python and its libraries; %s"
               % (workspace, _how_to_read(path)))
    exc.strerror = "%s (%s)" % (exc.strerror or os.strerror(exc.errno), why)
    exc._sandpit_reworded = True
    return True


def _how_to_read(path):
    """The way to grant the kernel a folder to read: path's, or path if it is one
    (stat works where reading does not)."""
    folder = path if os.path.isdir(path) else os.path.dirname(path) or path
    return ("to read %s too, start the kernel with --read %s (for a kernelspec: sandpit "
            "install --read %s), or with --workspace of a folder that holds it and the "
            "notebook" % (folder, folder, folder))


def _homes():
    """The home folders the sandbox treats so (sandbox/home.c): $HOME and the
    password database's, each as a real path."""
    found = []
    candidates = [os.environ.get("HOME")]
    try:
        import pwd
        candidates.append(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError, OSError):
        pass
    for home in candidates:
        if home and home.startswith("/"):
            real = os.path.realpath(home)
            if real != "/" and real not in found:
                found.append(real)
    return found


def _why_refused_inside(path, err, writing):
    """Why the sandbox refused a file in the workspace, or None when it did not
    (a file's own permissions). It hides the dot-entries at the top of a home
    folder and keeps that top level read-only, and binds a few paths read-only
    (the folders on PATH, ~/bin, .git, Jupyter's and IPython's folders): those
    give EROFS, or EACCES for a hidden entry."""
    folder, name = os.path.split(path)
    folder = os.path.realpath(folder)
    if folder in _homes():
        if name.startswith("."):
            return ("the sandbox hides the dot-files and dot-folders at the top of a home "
                    "folder, and no new one can be made there: logins and tools run code "
                    "from them and keep their keys there")
        if err == errno.EROFS:
            return ("nothing new can be made at the very top of a home folder, %s, no "
                    "file and no folder, and nothing there renamed or removed (what is "
                    "there stays writable): the sandbox keeps its top level read-only so "
                    "that no dot-file can appear; write into a folder that is already "
                    "there, or give the kernel a folder of its own with --workspace DIR"
                    % folder)
    if err != errno.EROFS or not writing:
        return None
    return ("the sandbox keeps this path read-only: programs, Python or Jupyter run code "
            "from it (the folders on PATH, ~/bin, .git, .hg, .vscode, Jupyter's and "
            "IPython's folders, start-up files, --venv, --read and PYTHONPATH folders)")


def guard_semaphores(synchronize):
    """multiprocessing.synchronize's SemLock (under every Lock, Queue, Pool,
    ProcessPoolExecutor and Manager) refused by the sandbox becomes the
    PermissionError that a new process gets."""
    cls = synchronize.SemLock
    init = cls.__init__
    if getattr(init, "_sandpit", False) or not options.SANDBOX:
        return

    def __init__(self, *args, **kwargs):
        try:
            init(self, *args, **kwargs)
        except OSError as e:
            if e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSYS):
                raise
            raise PermissionError(
                "%s: multiprocessing needs other processes, and cannot even make the "
                "locks and queues it shares with them" % _PROCESSES) from None
    __init__._sandpit = True
    cls.__init__ = __init__


def _raised_by_anonymous_mmap(exc):
    """Whether exc was raised by the call that the hook saw ask for an anonymous
    mapping (the innermost frame of its traceback, at that instruction)."""
    site = getattr(_anonymous_mmap, "site", None)
    tb = exc.__traceback__
    if site is None or tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return (tb.tb_frame.f_code, tb.tb_lasti) == site


def _make_hook(network):
    own_pid = os.getpid()

    def hook(event, args):
        # Most events are none of these: the first test is a set look-up.
        if event not in _EVENTS:
            return
        if event == "open":  # noted, for reword(): a read or a write?
            _last.path = args[0] if isinstance(args[0], (str, bytes)) else None
            mode, flags = args[1], args[2] if len(args) > 2 else 0
            _last.writing = (any(c in mode for c in "wax+") if isinstance(mode, str)
                             else bool(flags & _WRITE_FLAGS) if isinstance(flags, int)
                             else None)
            return
        if event in _WRITES:
            _last.path, _last.writing = args[0], True
            return
        if event in _READS:
            _last.path, _last.writing = args[0], False
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
        if event == "mmap.__new__":  # (fileno, length, access, offset)
            if args[0] == -1:
                caller = sys._getframe(1)
                _anonymous_mmap.site = (caller.f_code, caller.f_lasti)
            return
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


_WRITES = frozenset(("os.mkdir", "os.remove", "os.rmdir", "os.rename", "os.chmod",
                     "os.chown", "os.utime", "os.truncate", "os.symlink", "os.link"))
_READS = frozenset(("os.listdir", "os.scandir"))
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_EVENTS = frozenset((
    "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
    "os.forkpty", "os.kill", "os.killpg", "mmap.__new__", "socket.__new__", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr", "open",
)) | _WRITES | _READS


def install(user_ns):
    """Adds the hook when the sandbox is on (the kernel's --sandbox and
    --network, from sandpit.options)."""
    if not options.SANDBOX:
        return
    sys.addaudithook(_make_hook(options.NETWORK))
