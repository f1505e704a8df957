"""Stand-ins for what runs CI files, so the tests run attngate's reusable CI as a forge would:
a GitHub runner's composite action (its `run:` steps in order, each step's env evaluated from
inputs, earlier steps' outputs and the github context), a GitLab runner's job (inputs
interpolated into the component, variables expanded, the scripts run under `set -eo
pipefail`), and each forge's comment API in memory."""
import http.server
import json
import os
import re
import subprocess
import tempfile
import threading

import yaml

# --- GitHub: a composite action's steps ---------------------------------------------------

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def github_value(expr, context):
    """The value of one `${{ }}` expression: a dotted path into the context (inputs, steps,
    github, runner) or a comparison `path == 'literal'`. Anything else is an error, so an
    expression the action grows is one this stand-in is taught, not one it guesses."""
    m = re.fullmatch(r"([\w.-]+)\s*(==|!=)\s*'([^']*)'", expr)
    if m:
        return (github_value(m.group(1), context) == m.group(3)) == (m.group(2) == "==")
    if not re.fullmatch(r"[\w-]+(\.[\w-]+)*", expr):
        raise ValueError(f"an expression the stand-in runner does not evaluate: {expr}")
    value = context
    for part in expr.split("."):
        if not isinstance(value, dict) or part not in value:
            if expr.startswith("steps.") or expr.startswith("github.event."):
                return ""  # GitHub's value for an output never written or an absent event field
            raise ValueError(f"${{{{ {expr} }}}}: {part} is not in the context")
        value = value[part]
    return value


def github_evaluate(text, context):
    """A string with its `${{ }}` expressions replaced by their values."""
    return EXPRESSION.sub(lambda m: str(github_value(m.group(1), context)), str(text))


def read_github_output(path):
    """NAME=VALUE lines and NAME<<DELIMITER blocks, as the runner reads $GITHUB_OUTPUT."""
    with open(path) as f:
        lines = f.read().splitlines()
    outputs = {}
    i = 0
    while i < len(lines):
        name, sep, value = lines[i].partition("=")
        if "<<" in lines[i] and (not sep or "<<" in name):
            name, delimiter = lines[i].split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name], i = "\n".join(lines[i + 1:end]), end + 1
            continue
        outputs[name], i = value, i + 1
    return outputs


class StepRun:
    """What a composite action's run did: each step's name, exit code and output, its outputs."""

    def __init__(self):
        self.steps, self.outputs, self.skipped = [], {}, []

    @property
    def rc(self):
        return self.steps[-1][1] if self.steps else 0

    @property
    def failed_step(self):
        return next((name for name, rc, _ in self.steps if rc != 0), None)

    @property
    def log(self):
        return "\n".join(f"--- {name} (exit {rc})\n{out}" for name, rc, out in self.steps)


def run_composite(action_path, given, github, env, timeout=600):
    """Runs the composite action in action_path/action.yml with the inputs `given` as a runner
    would: defaults filled in (their expressions evaluated), each `run:` step with bash
    --noprofile --norc -eo pipefail in $GITHUB_WORKSPACE, its env evaluated, $GITHUB_OUTPUT
    read back for later steps; a `uses:` step is recorded as skipped (another action); the
    first step that fails ends the run. env holds the runner's variables (GITHUB_WORKSPACE,
    RUNNER_TEMP, GITHUB_STEP_SUMMARY, ...)."""
    with open(os.path.join(action_path, "action.yml")) as f:
        action = yaml.safe_load(f)
    unknown = set(given) - set(action["inputs"])
    if unknown:
        raise ValueError(f"inputs the action does not declare: {sorted(unknown)}")
    context = {"github": dict(github, action_path=action_path), "steps": {}, "runner": {"temp": env["RUNNER_TEMP"]}}
    context["inputs"] = {name: str(given[name]) if name in given else github_evaluate(spec.get("default", ""), context)
                         for name, spec in action["inputs"].items()}
    result = StepRun()
    for step in action["runs"]["steps"]:
        name = step.get("name", step.get("id", "?"))
        if "uses" in step:
            condition = EXPRESSION.sub(r"\1", step.get("if", "")).strip()
            result.skipped.append((name, step["uses"], github_value(condition, context) if condition else True))
            continue
        if "if" in step:
            raise ValueError(f"{name}: a run step with if: (the stand-in runs every step until one fails)")
        step_env = dict(os.environ, **env, GITHUB_ACTION_PATH=action_path)
        step_env.update({k: github_evaluate(v, context) for k, v in step.get("env", {}).items()})
        with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as script, \
                tempfile.NamedTemporaryFile("r", delete=False) as output:
            script.write(step["run"])
        step_env["GITHUB_OUTPUT"] = output.name
        try:
            p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", script.name], cwd=env["GITHUB_WORKSPACE"],
                               env=step_env, capture_output=True, text=True, timeout=timeout)
            outputs = read_github_output(output.name)
        finally:
            os.unlink(script.name)
            os.unlink(output.name)
        if "id" in step:
            context["steps"][step["id"]] = {"outputs": outputs}
        result.steps.append((name, p.returncode, p.stdout + p.stderr))
        if p.returncode != 0:
            break
    result.outputs = {k: github_evaluate(v["value"], context) for k, v in action.get("outputs", {}).items()}
    return result


# --- GitLab: a component's jobs -------------------------------------------------------------

def gitlab_component(path, inputs, component, resolve=True):
    """The jobs of a CI/CD component included with these inputs: the spec's defaults filled
    in, `$[[ inputs.X ]]` and `$[[ component.X ]]` interpolated as GitLab does at include time
    (an input that is not declared, or a required one not given, is GitLab's error here too);
    with resolve, `extends:` resolved too, as GitLab does next."""
    with open(path) as f:
        spec_text, _, body = f.read().partition("\n---\n")
    spec = yaml.safe_load(spec_text)["spec"]
    unknown = set(inputs) - set(spec["inputs"])
    if unknown:
        raise ValueError(f"inputs the component does not declare: {sorted(unknown)}")
    values = {}
    for name, decl in spec["inputs"].items():
        if name not in inputs and "default" not in decl:
            raise ValueError(f"the component's input {name} is required")
        values[name] = inputs.get(name, decl.get("default"))
        if "options" in decl and values[name] not in decl["options"]:
            raise ValueError(f"input {name}: {values[name]!r} is none of {decl['options']}")

    block = re.compile(r"\$\[\[\s*(inputs|component)\.([\w-]+)\s*\]\]")

    def value_of(m):
        scope, name = m.group(1), m.group(2)
        if scope == "component" and name not in spec.get("component", []):
            raise ValueError(f"$[[ component.{name} ]] without spec:component naming it")
        return (values if scope == "inputs" else component)[name]

    def interpolate(node):
        """GitLab interpolates the parsed YAML's strings: a string that is one block takes the
        input's value and type (a number stays a number), a longer one its text."""
        if isinstance(node, dict):
            return {k: interpolate(v) for k, v in node.items()}
        if isinstance(node, list):
            return [interpolate(v) for v in node]
        if isinstance(node, str):
            m = block.fullmatch(node.strip())
            return value_of(m) if m else block.sub(lambda m: str(value_of(m)), node)
        return node

    jobs = interpolate(yaml.safe_load(body))
    return gitlab_extends(jobs) if resolve else jobs


def gitlab_extends(jobs):
    """The jobs with `extends:` resolved as GitLab does: the parent's keys under the job's own,
    hashes merged key by key, anything else (a list, a string) replaced whole."""
    def merge(parent, child):
        out = dict(parent)
        for key, value in child.items():
            out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        return out

    def resolve(name, seen=()):
        job = jobs[name]
        if not isinstance(job, dict) or "extends" not in job:
            return job
        parents = job["extends"] if isinstance(job["extends"], list) else [job["extends"]]
        if set(parents) & set(seen):
            raise ValueError(f"{name}: extends itself")
        base = {}
        for parent in parents:
            base = merge(base, resolve(parent, (*seen, name)))
        return merge(base, {k: v for k, v in job.items() if k != "extends"})

    return {name: resolve(name) for name in jobs}


def gitlab_expand(value, variables):
    """$VAR and ${VAR} in a variable's value, as GitLab expands them (unknown: empty)."""
    return re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), ""), value)


def run_gitlab_job(jobs, name, predefined, cwd, timeout=600):
    """Runs one job as a GitLab runner with the bash shell does: global and job variables
    (expanded unless `expand: false`) over the predefined ones, then before_script and script
    as one bash script under `set -eo pipefail` in the project directory. Returns the process."""
    job = jobs[name]
    variables = dict(predefined)
    for scope in (jobs.get("variables", {}), job.get("variables", {})):
        for key, value in scope.items():
            if isinstance(value, dict):
                variables[key] = str(value["value"]) if value.get("expand", True) is False else gitlab_expand(str(value["value"]), variables)
            else:
                variables[key] = gitlab_expand(str(value), variables)
    lines = [*job.get("before_script", jobs.get("default", {}).get("before_script", [])), *job["script"]]
    script = "set -eo pipefail\n" + "\n".join(lines) + "\n"
    return subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=cwd, env=dict(os.environ, **variables),
                          capture_output=True, text=True, timeout=timeout)


# --- each forge's comment API, in memory ----------------------------------------------------

class FakeForge(http.server.BaseHTTPRequestHandler):
    """Comments in memory; GitHub's and GitLab's routes for listing, creating and updating, and
    for the token's user (`me`; None: /user refused, as for the workflow's GITHUB_TOKEN). A
    comment records its author as each forge does; updating another's is refused, as there."""
    comments, calls, refuse, me = [], [], False, "attngate-bot"

    @staticmethod
    def by(login, body, id_):
        return {"id": id_, "body": body, "user": {"login": login}, "author": {"username": login}}

    def log_message(self, *args):
        pass

    def reply(self, code, value):
        data = json.dumps(value).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        body = None
        if int(self.headers.get("Content-Length", 0)):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["body"]
        FakeForge.calls.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))  # names are case-blind
        if FakeForge.refuse:
            return self.reply(403, {"message": "Resource not accessible by integration"})
        path, _, query = self.path.partition("?")
        me = FakeForge.me or "github-actions[bot]"
        if self.command == "GET" and path.endswith("/user"):
            if FakeForge.me is None:
                return self.reply(403, {"message": "Resource not accessible by integration"})
            return self.reply(200, {"login": me, "username": me, "id": 7})
        if self.command == "GET":
            page = int(dict(q.split("=") for q in query.split("&"))["page"])
            return self.reply(200, FakeForge.comments[(page - 1) * 100:page * 100])
        if self.command == "POST":
            FakeForge.comments.append(FakeForge.by(me, body, 1000 + len(FakeForge.comments)))
            return self.reply(201, FakeForge.comments[-1])
        wanted = int(path.rsplit("/", 1)[1])
        for c in FakeForge.comments:
            if c["id"] == wanted:
                if (c.get("user") or {}).get("login") != me:
                    return self.reply(403, {"message": "Must have admin rights to Repository."})
                c["body"] = body
                return self.reply(200, c)
        return self.reply(404, {"message": "Not Found"})

    do_GET = do_POST = do_PATCH = do_PUT = handle_any


def start_forge(test, comments=()):
    """A FakeForge on a loopback port for this test (stopped at its end); returns its URL."""
    FakeForge.comments, FakeForge.calls, FakeForge.refuse, FakeForge.me = list(comments), [], False, "attngate-bot"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeForge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    test.addCleanup(server.server_close)
    test.addCleanup(server.shutdown)
    return f"http://127.0.0.1:{server.server_port}"
