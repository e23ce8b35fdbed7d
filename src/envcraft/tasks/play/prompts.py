"""The system prompt an agent starts with, per mode.

*Function-calling mode* gives the task's domain tools as OpenAI tools and a short prompt with
each environment's one-paragraph description (the class docstring). *Claw mode*, as the
paper's Claw agents get it, adds the system tools (shell and files) and puts each
environment's README into the system prompt, then the skills: under a harness profile
(OpenClaw, Claude Code) the skills lie in the workspace and the prompt lists them the way
OpenClaw does (name, description, location, read on demand); under the canonical profile
every ``SKILL.md`` is pasted in. Neither mode ever sees the task's reference, verifier or
checks.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Literal

from envcraft.core.package import EnvPackage
from envcraft.tasks.format.model import Task

FUNCTION_PREAMBLE = """\
You are an assistant that acts for a user through tools. Work out what the user wants, call \
the tools to do it (look things up before you change them), and check the results. When the \
user's request is done, reply to the user without calling a tool; the user may then ask for \
more."""

CLAW_PREAMBLE = """\
You are an agent working in a shared workspace (the current directory of your shell) for a \
user. You have a shell, file tools and the domain tools of the systems below. Read the files \
and the documentation you need, act with the tools, and check your work. When the user's \
request is done, reply to the user without calling a tool; the user may then ask for more. \
Inside the shell, `envcraft-tool list` and `envcraft-tool TOOL '{...json args...}'` reach the \
domain tools of the workspace's first system."""


def auto_mode(task: Task) -> Literal["function", "claw"]:
    """The mode a task is played in by default: Claw tasks in Claw mode, tool tasks in function mode.

    The rollout loop (``mode="auto"``) and the VERL export both ask here, so a policy trained on
    exported rows starts from the prompt it is evaluated with.
    """
    return "claw" if task.kind == "claw" else "function"


def system_prompt(packages: Mapping[str, EnvPackage], mode: str, skills: str | None = None) -> str:
    """The system message for ``packages`` in ``mode`` (``"function"`` or ``"claw"``).

    ``skills`` is the episode's skills listing (:meth:`Episode.skills_prompt`); empty or
    None (the canonical profile places no skills) pastes each skill's text instead.
    """
    if mode == "claw":
        parts = [CLAW_PREAMBLE]
        for package in packages.values():
            parts.append(f"# System: {package.manifest.title} (`{package.id}`)\n\n{package.readme.strip()}")
            if not skills:
                for name, path in package.skills.items():
                    parts.append(f"## Skill `{name}`\n\n{path.read_text(encoding='utf-8').strip()}")
        if skills:
            parts.append(skills.strip())
        return "\n\n".join(parts)
    parts = [FUNCTION_PREAMBLE]
    for package in packages.values():
        doc = inspect.getdoc(package.env_class) or ""
        parts.append(f"# {package.manifest.title} (`{package.id}`)\n\n{doc.strip()}")
    return "\n\n".join(parts)
