"""The searches of `attngate bisect`, over an oracle that says, for a candidate, which of the
changed rows it moves: the smallest set of units that moves a row (delta debugging: halves
first, and when neither half moves the row alone, the smallest part of each half with the other
half moved, which is how a row moved by two packages together is found with both), and the
first release (or commit) that moves it, by binary search, skipping candidates that cannot be
built, as `git bisect skip` does."""


class OutOfBudget(Exception):
    """--max-envs environments are spent."""


def minimal_set(units, moves, base=()):
    """The smallest subset S of `units` with moves(base + S) true, given moves(base + units) is
    true and moves(base) is not. `moves` takes a tuple of units."""
    units = list(units)
    if len(units) == 1:
        return units
    half = len(units) // 2
    first, second = units[:half], units[half:]
    if moves(tuple(base) + tuple(first)):
        return minimal_set(first, moves, base)
    if moves(tuple(base) + tuple(second)):
        return minimal_set(second, moves, base)
    mine = minimal_set(first, moves, tuple(base) + tuple(second))
    theirs = minimal_set(second, moves, tuple(base) + tuple(mine))
    return mine + theirs


def first_moving(candidates, moves, last_moves=True):
    """Binary search over candidates[0] (known not to move) .. candidates[-1] for the first that
    moves. moves(c) returns True, False or None (cannot be built: skipped). With last_moves the
    last candidate is known to move and is never tried; without it, it is searched as the
    others are (what `git bisect run` does with B: a range of n candidates after the known good
    end then needs ceil(log2(n + 1)) tries, B's among them only if the search reaches it).
    Returns (last that did not move, first that moved or None when none did, skipped candidates
    in between)."""
    lo, hi = 0, len(candidates) - 1 if last_moves else len(candidates)
    skipped = set()
    while hi - lo > 1:
        inside = [i for i in range(lo + 1, hi) if i not in skipped]
        if not inside:
            break
        mid = min(inside, key=lambda i: (abs(i - (lo + hi) / 2), i))
        verdict = moves(candidates[mid])
        if verdict is None:
            skipped.add(mid)
        elif verdict:
            hi = mid
        else:
            lo = mid
    first = candidates[hi] if hi < len(candidates) else None
    return candidates[lo], first, [candidates[i] for i in sorted(skipped) if lo < i < hi]
