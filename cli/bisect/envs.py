"""Candidate environments for `attngate bisect`: one venv per set of requirements, in a
content-addressed cache (the same requirements, index and Python give the same venv, reused by
later runs), installed by pip, whose resolver checks that the pins hold together. Wheels come
from pip's own cache. A venv is complete only once its marker is written: an interrupted build
is thrown away and made again."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

MARKER = "attngate-bisect.json"


class EnvFailed(Exception):
    """pip could not make this environment (the message is pip's own, trimmed)."""

    def __init__(self, message, missing=None, conflict=None):
        super().__init__(message)
        self.missing, self.conflict = missing, conflict


def pip_failure(stderr):
    """What pip said, as EnvFailed: a distribution it could not find, or pins that conflict."""
    missing = re.search(r"No matching distribution found for ([A-Za-z0-9._-]+)", stderr)
    conflict = stderr if ("ResolutionImpossible" in stderr or "conflicting dependencies" in stderr) else None
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip() and not ln.startswith("  ") or "depends on" in ln]
    return EnvFailed("\n".join(lines[-8:]), missing and missing.group(1), conflict)


class EnvCache:
    def __init__(self, root, index_args, python="/usr/bin/python3", log=None):
        self.root, self.index_args, self.python = root, list(index_args), python
        self.venvs = os.path.join(root, "venvs")
        os.makedirs(self.venvs, exist_ok=True)
        self.built, self.reused, self.log = [], [], log or (lambda *_: None)
        self.version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True,
                                      text=True, check=True).stdout.strip()

    def key(self, requirements):
        text = json.dumps({"python": self.version, "index": self.index_args, "requirements": sorted(requirements)})
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def get(self, requirements, label):
        """(python path, {name: version} installed) of the venv for these requirement lines."""
        key = self.key(requirements)
        path = os.path.join(self.venvs, key)
        marker = os.path.join(path, MARKER)
        if os.path.exists(marker):
            with open(marker) as f:
                info = json.load(f)
            if "error" in info:
                raise EnvFailed(info["error"], info.get("missing"), info.get("conflict"))
            if key not in self.reused and key not in self.built:
                self.reused.append(key)
            return os.path.join(path, "bin", "python"), info["installed"]
        shutil.rmtree(path, ignore_errors=True)  # an interrupted build
        self.log(f"building environment {len(self.built) + 1}: {label}")
        started = time.time()
        # No pip in the venv (ensurepip is most of a small venv's making): this pip installs into it.
        subprocess.run([self.python, "-m", "venv", "--without-pip", path], check=True, capture_output=True)
        req = os.path.join(path, "requirements.txt")
        with open(req, "w") as f:
            f.write("\n".join(sorted(requirements)) + "\n")
        python = os.path.join(path, "bin", "python")
        done = subprocess.run([*self.pip(python), "install", "--disable-pip-version-check", "-q", *self.index_args,
                               "-r", req], capture_output=True, text=True)
        if done.returncode != 0:
            failure = pip_failure(done.stderr)
            shutil.rmtree(path, ignore_errors=True)
            os.makedirs(path)
            self._mark(marker, {"requirements": sorted(requirements), "error": str(failure),
                                "missing": failure.missing, "conflict": failure.conflict})
            self.built.append(key)
            raise failure
        listed = subprocess.run([*self.pip(python), "list", "--format=json", "--disable-pip-version-check"],
                                capture_output=True, text=True, check=True)
        installed = {re.sub(r"[-_.]+", "-", p["name"]).lower(): p["version"] for p in json.loads(listed.stdout)}
        self._mark(marker, {"requirements": sorted(requirements), "installed": installed,
                            "seconds": round(time.time() - started, 1)})
        self.built.append(key)
        return python, installed

    def pip(self, venv_python):
        """This interpreter's pip, acting on the venv of `venv_python`."""
        return [self.python, "-m", "pip", "--python", venv_python]

    @staticmethod
    def _mark(marker, info):
        tmp = marker + ".tmp"
        with open(tmp, "w") as f:
            json.dump(info, f, indent=1)
        os.replace(tmp, marker)

    def count(self):
        return len(self.built) + len(self.reused)


def pins_to_requirements(pins):
    return [f"{name}=={ver}" for name, ver in sorted(pins.items())]


def index_versions(python, name, index_args):
    """The releases of `name` the index offers (pip index versions), oldest first; [] if none."""
    done = subprocess.run([python, "-m", "pip", "index", "versions", name, "--disable-pip-version-check", *index_args],
                          capture_output=True, text=True)
    m = re.search(r"Available versions:\s*(.+)", done.stdout)
    if done.returncode != 0 or not m:
        return []
    return list(reversed([v.strip() for v in m.group(1).split(",") if v.strip()]))


if __name__ == "__main__":
    sys.exit("envs.py is part of attngate bisect")
