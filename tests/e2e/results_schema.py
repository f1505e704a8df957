"""Every results file, baseline and history record an attngate command writes is checked
against docs/results.schema.json (JSON Schema 2020-12, python3-jsonschema). The e2e helpers
that run attngate (common.attngate and the like) wrap each call in `watch`, so every test's
outputs are covered without the test asking for it."""
import contextlib
import json
import os

import jsonschema

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "results.schema.json")
with open(SCHEMA_PATH) as _f:
    SCHEMA = json.load(_f)
jsonschema.Draft202012Validator.check_schema(SCHEMA)


def validator(kind):
    """A validator of one kind of file: results, baseline, history_record or fingerprint."""
    return jsonschema.Draft202012Validator({"$schema": SCHEMA["$schema"], "$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{kind}"})


VALIDATORS = {kind: validator(kind) for kind in ("results", "baseline", "history_record", "fingerprint")}


def kind_of(doc, path):
    """Which kind of attngate file this is, by its keys (None: not one the schema covers)."""
    if not isinstance(doc, dict):
        return None
    if "schema_version" in doc and "results" in doc:
        return "results"
    if "entries" in doc and "check" in doc:
        return "baseline"
    if "rows" in doc and "run" in doc:
        return "history_record"
    if os.path.basename(path) == "fingerprint.json" or os.path.basename(os.path.dirname(path)) == "fingerprints":
        return "fingerprint"
    return None


def validate_file(path):
    """Raises AssertionError naming the file, the JSON path and the rule when it does not fit."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return  # not JSON (an .npy, a half-written file of a killed run): not the schema's business
    validate_doc(doc, path)


def validate_doc(doc, path):
    """validate_file for a document already read (from a store's server, say); `path` names it."""
    kind = kind_of(doc, path)
    if kind is None:
        return
    errors = sorted(VALIDATORS[kind].iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
        raise AssertionError(f"{path}: at {where}: {e.message} (docs/results.schema.json $defs/{kind}; {len(errors)} error(s))")


def _stat(path):
    try:
        s = os.stat(path)
        return (s.st_ino, s.st_mtime_ns, s.st_size)
    except OSError:
        return None


def _snapshot(paths):
    """Every JSON file under these paths (files or directories) and its identity."""
    seen = {}
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for name in files:
                    if name.endswith(".json"):
                        full = os.path.join(root, name)
                        seen[full] = _stat(full)
        elif p.endswith(".json") or os.path.exists(p):
            seen[p] = _stat(p)
    return seen


DEFAULT_OUT = {"run": "reports/results.json", "ab": "reports/ab.json", "merge": "reports/results.json"}


def outputs_of(args, cwd=None):
    """The files and directories an attngate command line may write results, baselines or
    history into: --out/-o (or the subcommand's default), --baselines, and a --store that is
    a directory."""
    args = [str(a) for a in args]
    here = cwd or os.getcwd()
    out, has_out = [], False
    for flag, value in zip(args, args[1:]):
        if flag in ("--out", "-o"):
            out.append(value)
            has_out = True
        elif flag == "--baselines" or (flag == "--store" and "://" not in value):
            out.append(value)
    if args and args[0] in DEFAULT_OUT and not has_out:
        out.append(DEFAULT_OUT[args[0]])
    if args[:2] == ["baseline", "update"] and "--baselines" not in args and "--store" not in args:
        out.append("baselines")
    return [p if os.path.isabs(p) else os.path.join(here, p) for p in out]


def validate_all(*paths):
    """Every results file, baseline and history record under these files or directories: for
    what a script (ci/jax-bump.sh, an example's ci.sh) wrote by running attngate itself."""
    for path in _snapshot(paths):
        validate_file(path)


@contextlib.contextmanager
def watch(args, cwd=None):
    """Around one attngate call: afterwards, every JSON file it created or replaced among its
    outputs is validated (a file it did not touch, such as a test's own malformed input, is not)."""
    paths = outputs_of(args, cwd)
    before = _snapshot(paths)
    yield
    for path, ident in _snapshot(paths).items():
        if ident is not None and before.get(path) != ident:
            validate_file(path)
