"""Lock files read for `attngate bisect`: every requirement pinned with ==, each remembered with
its file and line, so that bad input is named where it is."""
import re

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s;\\]+)")
NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


class BadInput(Exception):
    """Bad input: exit 2, with a message naming the file and the place."""


def canonical(name):
    """PEP 503's normal form of a distribution name: jax, ml-dtypes, typing-extensions."""
    return re.sub(r"[-_.]+", "-", name).lower()


class Pin:
    def __init__(self, name, version, where):
        self.name, self.version, self.where = name, version, where


def logical_lines(text):
    """(first line number, line) with backslash continuations joined and comments dropped."""
    pending, first = "", None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0] if not raw.lstrip().startswith("#") else ""
        if first is None:
            first = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        if whole:
            yield first, whole
        first = None
    if pending.strip():
        yield first, pending.strip()


def read_lock(path):
    """{canonical name: Pin} from a pip-compile style lock (hashes allowed, markers ignored)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise BadInput(f"{path}: cannot read the lock file: {e.strerror}")
    pins = {}
    for number, line in logical_lines(text):
        if line.startswith("-"):  # --index-url, --hash on its own line, -r: pip's options
            continue
        m = PIN.match(line)
        if not m:
            name = NAME.match(line)
            what = f"'{name.group(1)}'" if name else repr(line[:40])
            raise BadInput(f"{path}:{number}: {what} is not pinned to one version with == "
                           f"(bisect moves packages between two exact pins; expected NAME==VERSION)")
        name = canonical(m.group(1))
        if name in pins:
            raise BadInput(f"{path}:{number}: {name} is pinned twice (first at line {pins[name].where.split(':')[-1]})")
        pins[name] = Pin(name, m.group(3), f"{path}:{number}")
    if not pins:
        raise BadInput(f"{path}:1: no pinned requirement (NAME==VERSION) in the lock file: nothing to bisect")
    return pins


def moved_packages(old, new, old_path, new_path):
    """The packages whose pin differs (changed, added or removed), sorted; none is bad input."""
    names = sorted(n for n in set(old) | set(new)
                   if (old.get(n) and old[n].version) != (new.get(n) and new[n].version))
    if not names:
        raise BadInput(f"{new_path}:1: pins the same versions as {old_path}: an empty range, nothing moved to bisect")
    return names
