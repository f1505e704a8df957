"""`attngate bisect --a-lock OLD --b-lock NEW`: which package, which release moved each row.

1. Environments for OLD and NEW (pip resolves them: an unknown package or a pair that cannot
   be installed together is bad input naming the lock line). `ab` of OLD against itself and
   against NEW gives the changed rows; a second OLD-against-NEW run that does not show a change
   again marks that row flaky (reported, never blamed).
2. Units (packages that require each other) from the packages' own requirements; the smallest
   set of units that moves each row, every candidate closed over what its members require.
3. For each unit found, its leader's releases between the two pins, from the index, bisected
   with the other pins kept (the unit's other members left to pip within their two pins)."""
import re
import time

from envs import EnvFailed, index_versions, pins_to_requirements
from groups import Grouping, Version, probe
from locks import BadInput, canonical, moved_packages, read_lock
from oracle import OracleFailed, changed_rows, describe_change, moves_like_new
from search import OutOfBudget, first_moving, minimal_set


def build_side(cache, pins, lock, label):
    """The venv of a lock's pins; pip's failure becomes bad input naming the lock's line."""
    try:
        return cache.get(pins_to_requirements({n: p.version for n, p in pins.items()}) + cache.extra, label)
    except EnvFailed as e:
        if e.missing and (p := pins.get(e.missing.lower().replace("_", "-"))):
            raise BadInput(f"{p.where}: {p.name}=={p.version} is not on the package index: unknown package or release\n  {e}")
        if e.conflict:
            lines = sorted(pins_to_requirements({n: p.version for n, p in pins.items()}) + cache.extra)
            named = {lines[int(n) - 1].split("==")[0] for n in re.findall(r"\(line (\d+)\)", e.conflict) if int(n) <= len(lines)}
            named |= {canonical(n) for n in re.findall(r"([A-Za-z0-9][A-Za-z0-9._-]*)==", e.conflict)}
            where = [p.where for n, p in sorted(pins.items()) if n in named]
            raise BadInput(f"{', '.join(where) or lock}: these pins cannot be installed together (pip's resolver):\n  {e}")
        raise BadInput(f"{lock}: pip cannot install these pins:\n  {e}")


class LockBisect:
    def __init__(self, args, cache, oracle, log):
        self.args, self.cache, self.oracle, self.log = args, cache, oracle, log
        self.budget = args.max_envs

    def spend(self):
        if self.budget and self.cache.count() >= self.budget and not self._pending_reuse:
            raise OutOfBudget()

    def env(self, requirements, label):
        """A candidate's venv, within --max-envs (a venv already in the cache from this run is free)."""
        key = self.cache.key(requirements)
        self._pending_reuse = key in self.cache.built or key in self.cache.reused
        self.spend()
        return self.cache.get(requirements, label)

    def side(self, python):
        return ("adapter", f"{python} {self.args.adapter}")

    def judge(self, requirements, label):
        """{row: signature} of the candidate; None when pip cannot make it or attngate cannot run
        in it (an adapter that does not start, a kernel module that does not import there):
        skipped, as `git bisect skip` skips a commit that does not build."""
        try:
            python, installed = self.env(requirements + self.cache.extra, label)
        except EnvFailed as e:
            self.log(f"  cannot build {label}: {str(e).splitlines()[-1] if str(e) else 'pip failed'}")
            return None, None
        try:
            return self.oracle.run(self.old_side, self.side(python), self.cache.key(requirements + self.cache.extra)), installed
        except OracleFailed as e:
            if e.code == 2:  # bad input: the same for every candidate
                raise
            self.log(f"  cannot run {label}: {str(e).strip().splitlines()[-1].strip()}")
            return None, None

    def run(self):
        a = self.args
        started = time.time()
        old, new = read_lock(a.a_lock), read_lock(a.b_lock)
        moved = moved_packages(old, new, a.a_lock, a.b_lock)
        self.log(f"{len(moved)} package(s) moved from {a.a_lock} to {a.b_lock}: {', '.join(moved[:8])}"
                 + (f" and {len(moved) - 8} more" if len(moved) > 8 else ""))
        self._pending_reuse = False
        old_py, _ = build_side(self.cache, old, a.a_lock, "the old lock")
        new_py, _ = build_side(self.cache, new, a.b_lock, "the new lock")
        self.old_side = self.side(old_py)
        old_sigs = self.oracle.run(self.old_side, self.old_side, "old-against-old")
        new_sigs = self.oracle.run(self.old_side, self.side(new_py), "old-against-new")
        changes = changed_rows(old_sigs, new_sigs)
        report = {"mode": "locks", "a_lock": a.a_lock, "b_lock": a.b_lock, "suite": a.suite, "moved": moved, "rows": []}
        if not changes:
            self.log("no row differs between the two locks")
            return self.finish(report, started)
        self.oracle.restrict(changes)
        again = self.oracle.run(self.old_side, self.side(new_py), "old-against-new-again", fresh=True)
        grouping = Grouping({n: p.version for n, p in old.items()}, {n: p.version for n, p in new.items()},
                            {n: m["requires"] for n, m in probe(old_py).items()},
                            {n: m["requires"] for n, m in probe(new_py).items()}, moved)
        report["units"] = [list(u) for u in grouping.units]
        for row, components in sorted(changes.items()):
            entry = {"row": row, "change": describe_change(old_sigs.get(row, {}), new_sigs[row], components),
                     "components": components}
            report["rows"].append(entry)
            if not moves_like_new(again.get(row, {}), new_sigs[row], components):
                entry["flaky"] = True
                self.log(f"{row}: {entry['change']} did not show again on a second run of the new lock: flaky, not bisected")
                continue
            try:
                self.blame(entry, row, components, new_sigs[row], grouping)
            except OutOfBudget:
                entry["unfinished"] = f"--max-envs {self.budget} reached"
                self.log(f"{row}: stopped, --max-envs {self.budget} environments spent")
        return self.finish(report, started)

    def blame(self, entry, row, components, new_sig, grouping):
        untested = []  # package sets that could not be installed or run: taken as not moving the row

        def moves(units):
            closed = grouping.unit_closure(units)
            names = {n for u in closed for n in u}
            sigs, _ = self.judge(pins_to_requirements(grouping.pins(names)), "moved: " + ", ".join(sorted(names)))
            if sigs is None:
                untested.append(sorted(names))
            return sigs is not None and moves_like_new(sigs.get(row, {}), new_sig, components)
        memo = {}
        def cached(units):
            key = grouping.unit_closure(units)
            if key not in memo:
                memo[key] = moves(units)
            return memo[key]
        # Units that others need first: a set's closure drags them in, so they are the likelier cause.
        ordered = sorted(grouping.units, key=lambda u: (len(grouping.unit_closure([u])), u))
        found = minimal_set(ordered, cached)
        while True:  # a unit found only because its closure moved what it needs: blame what it needs
            needed = [u for u in grouping.unit_closure(found) if u not in found]
            if not needed or not cached(tuple(needed)):
                break
            found = minimal_set(needed, cached)
        closed = grouping.unit_closure(found)
        entry["units"] = [list(u) for u in found]
        entry["pulled_in"] = sorted(n for u in closed if u not in found for n in u)
        if untested:  # the set found is the smallest that moves the row among the sets that could be tried
            entry["untested"] = untested
        entry["releases"] = [self.releases(row, unit, found, closed, components, new_sig, grouping) for unit in found]

    def releases(self, row, unit, found, closed, components, new_sig, grouping):
        """The unit's leader bisected over its releases between the two pins."""
        leader = grouping.leader(unit)
        old_v, new_v = grouping.old.get(leader), grouping.new.get(leader)
        result = {"package": leader, "with": [n for n in unit if n != leader], "old": old_v, "new": new_v}
        if old_v is None or new_v is None:
            result["kind"] = "added" if old_v is None else "removed"
            return result
        lo, hi = sorted([old_v, new_v], key=Version)
        on_index = [v for v in index_versions(self.cache.python, leader, self.cache.index_args)
                    if Version(lo) < Version(v) < Version(hi) and not Version(v).is_prerelease]
        ordered = sorted(on_index, key=Version)
        if Version(old_v) > Version(new_v):
            ordered.reverse()
        others = {n for u in closed if u != unit for n in u}
        base = grouping.pins(others)
        installed = {}

        def requirements(version):
            reqs = {n: f"{n}=={v}" for n, v in base.items() if n not in unit}
            reqs[leader] = f"{leader}=={version}"
            for member in unit:
                if member != leader and member in grouping.old and member in grouping.new:
                    a, b = sorted([grouping.old[member], grouping.new[member]], key=Version)
                    reqs[member] = f"{member}>={a},<={b}"
                elif member != leader and member in grouping.new:
                    reqs[member] = member
            return sorted(reqs.values())

        def moves(version):
            sigs, inst = self.judge(requirements(version), f"{leader}=={version}")
            if sigs is None:
                return None
            installed[version] = inst
            return moves_like_new(sigs.get(row, {}), new_sig, components)
        before, after, skipped = first_moving([old_v, *ordered, new_v], moves)
        result.update({"before": before, "after": after, "skipped": skipped, "releases_between": len(ordered)})
        if before in installed and after in installed:
            a, b = installed[before], installed[after]
            result["moved_with"] = sorted(n for n in set(a) | set(b) if n != leader and a.get(n) != b.get(n))
            result["unmoved"] = sorted(n for n in set(a) & set(b) if a[n] == b[n] and n in grouping.old)
        else:
            result["moved_with"] = [n for n in unit if n != leader]
            result["unmoved"] = sorted(n for n in grouping.old if n not in grouping.moved)
        return result

    def finish(self, report, started):
        report["environments"] = self.cache.count()
        report["built"], report["reused"] = len(self.cache.built), len(self.cache.reused)
        report["ab_runs"] = self.oracle.runs
        report["seconds"] = round(time.time() - started, 1)
        return report
