"""What the hardening tests share: processes seen through /proc, hostile plugins compiled
from C against the kernel ABI header, and a test class that holds them with a suite."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from common import ARGS, suite_with_goldens


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def kill_all(pids):
    """Cleans up after a failed test: what the old behaviour left running."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def pids_once_written(path, seconds=60.0):
    """The pids a started process wrote to `path`, read a moment after the file appears (so
    that the line is complete); None when it never appears within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not os.path.exists(path):
        time.sleep(0.1)
    if not os.path.exists(path):
        return None
    time.sleep(0.3)
    with open(path) as f:
        return [int(x) for x in f.read().split()]


def children_of(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
    return out


def build_plugins(directory, source_dir, prelude, plugins):
    """Compiles each {name: C body} after `prelude` into directory/lib<name>.so; {name: path}."""
    built = {}
    for name, body in plugins.items():
        src = os.path.join(directory, name + ".c")
        with open(src, "w") as f:
            f.write(prelude + body + "\n")
        so = os.path.join(directory, f"lib{name}.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-pthread", "-w", "-I", os.path.join(source_dir, "kernels", "include"), "-o", so, src],
                       check=True)
        built[name] = so
    return built


class PluginTestCase(unittest.TestCase):
    """Per class: a temporary directory, SUITE with its goldens (cls.suite, cls.bl) and each of
    PLUGINS compiled after PRELUDE (cls.plugins[name])."""
    PREFIX = "attngate-hardening-"
    SUITE = None
    PRELUDE = ""
    PLUGINS = {}

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix=cls.PREFIX)
        cls.bl = os.path.join(cls.dir, "bl")
        cls.suite = suite_with_goldens(os.path.join(cls.dir, cls.SUITE["name"] + ".json"), cls.SUITE, cls.bl)
        cls.plugins = build_plugins(cls.dir, ARGS.source_dir, cls.PRELUDE, cls.PLUGINS)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)
