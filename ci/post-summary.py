"""Posts attngate's Markdown summaries as one pull-request (GitHub) or merge-request
(GitLab) comment, and updates that same comment on every later run instead of adding one.

    python3 ci/post-summary.py github|gitlab SUMMARY.md [MORE.md ...]

From any directory (the reusable action runs it from its own checkout, in the team's
workspace): it reads only the files named and the environment.
Missing files are left out (a job that did not run wrote none); none at all: nothing is
posted. The comment is found again by a marker line in its body, among the comments of the
token's own user only: anyone can post the marker, and a comment of someone else's is never
updated (a new one is posted instead).

ATTNGATE_COMMENT_KEY (optional) keeps one comment per key, so that two gates of one pull request
(a plugin's suite and an adapter's) do not overwrite each other; without it, the one comment.
GitHub: GITHUB_TOKEN (a secret: the workflow's token with pull-requests: write),
GITHUB_REPOSITORY, PR_NUMBER, GITHUB_API_URL (default https://api.github.com); the token's user
is asked of GET /user, and where a token may not ask (the workflow's own) it is
github-actions[bot]; ATTNGATE_COMMENT_AUTHOR (a login) says it instead.
GitLab: ATTNGATE_GITLAB_TOKEN (a masked CI/CD variable: a project access token with the
api scope), CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID.
Exit 0 posted or nothing to post, 2 bad usage, 3 the API refused or was unreachable."""
import json
import os
import re
import sys
import urllib.error
import urllib.request

MARKER = "<!-- attngate summary: updated in place by ci/post-summary.py -->"
LIMIT = 60000  # GitHub refuses comments over 65536 characters; GitLab notes over 1,000,000


def marker_of(key):
    """The line that finds this comment again: the plain marker, or one per key (a suite)."""
    return MARKER if not key else MARKER.replace("summary:", f"summary {re.sub(r'[^A-Za-z0-9_./]', '_', key)}:")


class Forge:
    """A place comments live: list, create, update, each a JSON HTTP call."""

    def __init__(self, kind, env):
        self.marker = marker_of(env.get("ATTNGATE_COMMENT_KEY", ""))  # the one body_of wrote
        if kind == "github":
            self.base = f"{env.get('GITHUB_API_URL', 'https://api.github.com')}/repos/{env['GITHUB_REPOSITORY']}"
            self.list_url = f"{self.base}/issues/{env['PR_NUMBER']}/comments"
            self.item_url = f"{self.base}/issues/comments/{{id}}"
            self.update_method = "PATCH"
            self.headers = {"Authorization": f"Bearer {env['GITHUB_TOKEN']}", "Accept": "application/vnd.github+json"}
            self.user_url = f"{env.get('GITHUB_API_URL', 'https://api.github.com')}/user"
            self.author_of = lambda c: (c.get("user") or {}).get("login")
        else:
            self.base = f"{env['CI_API_V4_URL']}/projects/{env['CI_PROJECT_ID']}"
            self.list_url = f"{self.base}/merge_requests/{env['CI_MERGE_REQUEST_IID']}/notes"
            self.item_url = f"{self.list_url}/{{id}}"
            self.update_method = "PUT"
            self.headers = {"PRIVATE-TOKEN": env["ATTNGATE_GITLAB_TOKEN"]}
            self.user_url = f"{env['CI_API_V4_URL']}/user"
            self.author_of = lambda c: (c.get("author") or {}).get("username")
        self.kind, self.author = kind, env.get("ATTNGATE_COMMENT_AUTHOR") or None

    def call(self, method, url, body=None):
        data = None if body is None else json.dumps({"body": body}).encode()
        headers = dict(self.headers, **({"Content-Type": "application/json"} if data else {}))
        with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers), timeout=60) as r:
            return json.load(r)

    def me(self):
        """The login of the token's user: the only author whose comment may be updated."""
        if self.author is None:
            try:
                self.author = self.call("GET", self.user_url)["login" if self.kind == "github" else "username"]
            except urllib.error.HTTPError as e:
                if self.kind != "github" or e.code != 403:
                    raise
                self.author = "github-actions[bot]"  # the workflow's GITHUB_TOKEN may not read /user
        return self.author

    def find(self):
        """The id of this user's comment that holds the marker, or None (every page is read)."""
        me = self.me()
        page = 1
        while True:
            comments = self.call("GET", f"{self.list_url}?per_page=100&page={page}")
            for c in comments:
                if self.marker in (c.get("body") or "") and self.author_of(c) == me:
                    return c["id"]
            if len(comments) < 100:
                return None
            page += 1

    def post(self, body):
        found = self.find()
        if found is None:
            self.call("POST", self.list_url, body)
            return "posted"
        self.call(self.update_method, self.item_url.format(id=found), body)
        return f"updated comment {found}"


def body_of(paths, marker):
    parts = []
    for p in paths:
        if os.path.exists(p):
            with open(p) as f:
                parts.append(f.read().strip())
    if not parts:
        return None
    body = "\n\n".join(parts)
    if len(body) > LIMIT:
        body = body[:LIMIT] + "\n\n… (cut here: the whole summary is in the job's artifacts)"
    return f"{marker}\n{body}\n"


def main(argv, env):
    if len(argv) < 3 or argv[1] not in ("github", "gitlab"):
        print(__doc__, file=sys.stderr)
        return 2
    body = body_of(argv[2:], marker_of(env.get("ATTNGATE_COMMENT_KEY", "")))
    if body is None:
        print(f"post-summary: none of {', '.join(argv[2:])} exists: nothing to post")
        return 0
    try:
        forge = Forge(argv[1], env)
    except KeyError as e:
        print(f"post-summary: {argv[1]}: the environment variable {e.args[0]} is not set", file=sys.stderr)
        return 2
    try:
        print(f"post-summary: {forge.post(body)} on {forge.list_url}")
    except (urllib.error.URLError, OSError, ValueError) as e:
        detail = e.read().decode(errors="replace")[:300] if isinstance(e, urllib.error.HTTPError) else ""
        print(f"post-summary: {forge.list_url}: {e} {detail}".rstrip(), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv, os.environ))
