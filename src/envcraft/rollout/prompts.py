"""The system prompt an agent starts with, per mode.

*Function-calling mode* gives the task's domain tools as OpenAI tools and a short prompt with
each environment's one-paragraph description (the class docstring). *Claw mode*, as the
paper's Claw agents get it, adds the system tools (shell and files) and puts each
environment's README and every skill's ``SKILL.md`` into the system prompt. Neither ever
sees the task's reference, verifier or checks.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

from envcraft.core.package import EnvPackage

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


def system_prompt(packages: Mapping[str, EnvPackage], mode: str) -> str:
    """The system message for ``packages`` in ``mode`` (``"function"`` or ``"claw"``)."""
    if mode == "claw":
        parts = [CLAW_PREAMBLE]
        for package in packages.values():
            parts.append(f"# System: {package.manifest.title} (`{package.id}`)\n\n{package.readme.strip()}")
            for name, path in package.skills.items():
                parts.append(f"## Skill `{name}`\n\n{path.read_text(encoding='utf-8').strip()}")
        return "\n\n".join(parts)
    parts = [FUNCTION_PREAMBLE]
    for package in packages.values():
        doc = inspect.getdoc(package.env_class) or ""
        parts.append(f"# {package.manifest.title} (`{package.id}`)\n\n{doc.strip()}")
    return "\n\n".join(parts)
