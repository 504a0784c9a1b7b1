"""The action's sticky pull-request comment (run by action.yml with the runner's python3).

One comment per pull request, found by the hidden marker that starts the gate's Markdown report
(in a comment written by the token's own identity) and updated in place; created when there is
none. Environment (set by action.yml):

- ``MODE``: always | on-failure | off. ``on-failure`` posts only when the verdict is not
  ``pass``, but still updates an existing comment, so it never shows a stale failure.
- ``VERDICT``: the gate's verdict; ``SUMMARY``: the Markdown report (the comment's body).
- ``GH_TOKEN``: the token ``gh`` uses (needs ``pull-requests: write``).
- GitHub's own: ``GITHUB_EVENT_NAME``, ``GITHUB_EVENT_PATH``, ``GITHUB_REPOSITORY``,
  ``GITHUB_SERVER_URL``, ``GITHUB_RUN_ID``.

The body is the report as the gate wrote it (the gate escapes everything from the inputs) and
a link to the workflow run, built only from GitHub's own variables and left out unless they
have their documented form.

It never fails the job: anything that stops the comment (a fork's read-only token, a token
without write access, no ``gh``) is a ``::warning::`` and exit 0. The job summary always has the
report. Standard library only; talks to GitHub through the ``gh`` CLI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARKER = "<!-- retrieval-gate report -->"
MAX_BODY = 65_000  # GitHub refuses comment bodies over 65,536 characters
WRITE_HINT = ("give the job `permissions: pull-requests: write`, or set comment: off; "
              "the job summary has the report")


def warn(message: str) -> None:
    message = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::warning title=retrieval-gate::{message}", flush=True)


def gh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["gh", *args], capture_output=True, text=True, check=False)


def json_values(text: str) -> list:
    """Every JSON value in ``text``: ``gh api --paginate`` prints one array per page, back to
    back."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return values
        value, at = decoder.raw_decode(text, at)
        values.append(value)


BOT = "github-actions[bot]"  # who comments with the workflow's GITHUB_TOKEN


def token_login() -> str:
    """Who the token comments as: ``gh api user`` answers for a personal token; the workflow's
    GITHUB_TOKEN may not read /user (403), and comments as github-actions[bot]."""
    asked = gh("api", "user", "--jq", ".login")
    login = asked.stdout.strip()
    return login if asked.returncode == 0 and login else BOT


def existing_comment(repo: str, number: int, author: str) -> int | None:
    """The id of the pull request's comment that ``author`` wrote and that starts with the
    marker, else None. Anyone can write the marker into a comment of their own: only the
    token's own comment is updated, never a stranger's (whose edits would then rewrite the
    report)."""
    listed = gh("api", "--paginate", f"repos/{repo}/issues/{number}/comments")
    if listed.returncode != 0:
        raise RuntimeError(f"listing the comments failed: {listed.stderr.strip()}")
    for page in json_values(listed.stdout):
        for comment in page if isinstance(page, list) else [page]:
            if ((comment.get("body") or "").startswith(MARKER)
                    and (comment.get("user") or {}).get("login") == author):
                return int(comment["id"])
    return None


def run_link() -> str | None:
    """The workflow run's address, or None unless GITHUB_SERVER_URL, GITHUB_REPOSITORY and
    GITHUB_RUN_ID look as GitHub sets them (so nothing else reaches the comment's Markdown)."""
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    repo = os.environ.get("GITHUB_REPOSITORY", "")
    run = os.environ.get("GITHUB_RUN_ID", "")
    if (re.fullmatch(r"https?://[A-Za-z0-9.-]+(:[0-9]+)?", server)
            and re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo)
            and re.fullmatch(r"[0-9]+", run)):
        return f"{server}/{repo}/actions/runs/{run}"
    return None


def body(summary: str) -> str:
    with open(summary, encoding="utf-8") as handle:
        text = handle.read()
    if not text.startswith(MARKER):
        text = f"{MARKER}\n{text}"
    link = run_link()
    footer = f"\n\n<sub>[workflow run]({link})</sub>\n" if link else "\n"
    if len(text) + len(footer) > MAX_BODY:
        cut = text[:MAX_BODY - len(footer) - 100]
        text = cut[:cut.rfind("\n") + 1] + "\n… cut to fit a comment; the job summary has it all."
    return text.rstrip("\n") + footer


def main() -> int:
    mode = os.environ.get("MODE", "always")
    verdict = os.environ.get("VERDICT", "")
    if mode == "off":
        return 0
    if mode not in ("always", "on-failure"):
        warn(f"comment is '{mode}'; expected always, on-failure or off — no comment")
        return 0
    if os.environ.get("GITHUB_EVENT_NAME") != "pull_request":
        print(f"Not a pull_request event ({os.environ.get('GITHUB_EVENT_NAME')}): no comment.")
        return 0

    with open(os.environ["GITHUB_EVENT_PATH"], encoding="utf-8") as handle:
        pull = json.load(handle)["pull_request"]
    repo = os.environ["GITHUB_REPOSITORY"]
    head = (pull.get("head") or {}).get("repo") or {}
    if head.get("full_name") != repo:
        warn(f"pull request from a fork ({head.get('full_name') or 'a deleted repository'}): "
             "its token is read-only, so no comment; the job summary has the report")
        return 0
    if not os.environ.get("GH_TOKEN"):
        warn(f"no github-token, so no comment; {WRITE_HINT}")
        return 0
    if shutil.which("gh") is None:
        warn("the gh CLI is not on PATH, so no comment; the job summary has the report")
        return 0

    number = int(pull["number"])
    try:
        found = existing_comment(repo, number, token_login())
    except RuntimeError as exc:
        warn(f"{exc}; no comment")
        return 0
    if found is None and mode == "on-failure" and verdict == "pass":
        print("Verdict pass and comment: on-failure: no comment.")
        return 0

    with tempfile.TemporaryDirectory() as folder:
        text = body(os.environ["SUMMARY"])
        if found is not None:
            payload = os.path.join(folder, "comment.json")
            with open(payload, "w", encoding="utf-8") as handle:
                json.dump({"body": text}, handle)
            done = gh("api", "--method", "PATCH", f"repos/{repo}/issues/comments/{found}",
                      "--input", payload)
            action = f"updated comment {found}"
        else:
            payload = os.path.join(folder, "comment.md")
            with open(payload, "w", encoding="utf-8") as handle:
                handle.write(text)
            done = gh("pr", "comment", str(number), "--repo", repo, "--body-file", payload)
            action = "commented"
    if done.returncode != 0:
        error = done.stderr.strip()
        if "403" in error or "not accessible" in error.lower():
            warn(f"the token cannot write to pull requests ({error}); {WRITE_HINT}")
        else:
            warn(f"gh failed: {error}")
        return 0
    print(f"retrieval-gate: {action} on pull request #{number}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
