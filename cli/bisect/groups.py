"""Which packages must move together, from the packages' own requirements (their Requires-Dist,
read from the old and the new environments), never from a list: moving a set of packages must
leave every requirement of every installed package satisfied. Units are the packages that
require each other (jax pins jaxlib, and the old jax pins the old jaxlib); a moved set is always
closed over what its members need (a new tokamax brings the new jax)."""
import json
import subprocess

try:
    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    from packaging.version import InvalidVersion, Version
except ImportError:  # Debian's python3 has pip's copy, not the package
    from pip._vendor.packaging.markers import default_environment
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.version import InvalidVersion, Version

from locks import canonical

PROBE = r"""
import importlib.metadata as m, json, re, sys
out = {}
for d in m.distributions():
    name = re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower()
    out[name] = {"version": d.version, "requires": d.requires or []}
json.dump({"packages": out, "python": sys.version}, sys.stdout)
"""


def probe(python):
    """{name: {"version", "requires"}} of every distribution installed for `python`."""
    done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["packages"]


def version(text):
    try:
        return Version(text)
    except InvalidVersion:
        return None


def applies(req, environment):
    """A requirement that holds here: its marker true, extras not asked for."""
    if req.marker is None:
        return True
    try:
        return req.marker.evaluate({**environment, "extra": ""})
    except Exception:
        return True


class Grouping:
    """old/new: {name: version}; old_meta/new_meta: {name: [requirement strings]} at those versions."""

    def __init__(self, old, new, old_meta, new_meta, moved):
        self.old, self.new, self.moved = old, new, list(moved)
        self.env = default_environment()
        self.requires = {"old": self._parse(old_meta), "new": self._parse(new_meta)}
        self.units = self._units()

    def _parse(self, meta):
        out = {}
        for name, reqs in meta.items():
            parsed = []
            for text in reqs:
                try:
                    r = Requirement(text)
                except Exception:
                    continue
                if applies(r, self.env):
                    parsed.append(r)
            out[name] = parsed
        return out

    def pins(self, moved_set):
        """{name: version} of the old pins with `moved_set` at the new (absent: removed)."""
        pins = dict(self.old)
        for name in moved_set:
            if self.new.get(name) is None:
                pins.pop(name, None)
            else:
                pins[name] = self.new[name]
        return pins

    def violations(self, moved_set):
        """(requirer, required) pairs whose requirement the mixed environment breaks."""
        pins, broken = self.pins(moved_set), []
        for name, ver in pins.items():
            side = "new" if name in moved_set else "old"
            for req in self.requires[side].get(name, []):
                dep = canonical(req.name)
                have = pins.get(dep)
                if have is None:
                    if dep in self.old or dep in self.new:
                        broken.append((name, dep))
                    continue
                v = version(have)
                if v is not None and not req.specifier.contains(v, prereleases=True):
                    broken.append((name, dep))
        return broken

    def closure(self, moved_set):
        """The smallest superset of `moved_set` whose mixed environment keeps every requirement."""
        closed = set(moved_set)
        while True:
            grew = False
            for requirer, dep in self.violations(closed):
                for name in (dep, requirer):
                    if name in self.moved and name not in closed:
                        closed.add(name)
                        grew = True
                        break
            if not grew:
                return closed

    def _units(self):
        reach = {name: self.closure({name}) for name in self.moved}
        units, seen = [], set()
        for name in self.moved:
            if name in seen:
                continue
            unit = sorted(other for other in reach[name] if name in reach[other])
            seen.update(unit)
            units.append(tuple(unit))
        return units

    def unit_closure(self, units):
        """The units `units` need to move with them (themselves included), as a sorted tuple."""
        names = self.closure({n for u in units for n in u})
        return tuple(u for u in self.units if set(u) & names)

    def leader(self, unit):
        """The member whose releases are bisected: the one that requires the others (jax, not jaxlib)."""
        def pulls(name):
            return sum(1 for r in self.requires["new"].get(name, []) if canonical(r.name) in unit)
        return max(sorted(unit), key=pulls)
