"""A task opened for play: one fresh set of sessions, calls recorded per user turn, scored.

An :class:`Episode` is the one place that opens a task's environments for an agent: every
environment of the task gets a fresh session from the task's S0, the task's Claw
environments share one workspace holding the task's files, and every call is recorded with
the user turn it was made in. The rollout loop, ``tasks play``, the trainer adapters and the
tool servers drive an Episode one call at a time; golden runs, replays and scoring
(:func:`envcraft.tasks.play.execute.run_calls`) drive one from a list of calls. So every door
sees the same sessions, the same workspace, the same per-turn snapshots and the same
:class:`~envcraft.tasks.play.execute.Outcome`, and a trajectory recorded through one scores the
same through any other.

Sessions are in memory (the fast path) unless a ``directory`` is given: then each
environment's session is a durable session directory ``DIR/sessions/<env>/`` and the shared
workspace is ``DIR/workspace/``, so ``envcraft call --session DIR/sessions/<env>`` can act on
it from another process.

**Tool names.** :meth:`Episode.tools` lists what an agent may call, as OpenAI function tools.
A domain tool is exposed under its own name, unless two of the task's environments declare
the same name: then each is exposed as ``<env>__<tool>``. The system tools of Claw
environments (``shell``, ``read_file``, ...) act on the one shared workspace, so they are
exposed once, bound to the task's first Claw environment (its ``shell`` reaches that
environment's domain tools through ``envcraft-tool``).

**Tool profiles.** ``Episode.open(task, profile="openclaw")`` (or ``"claude-code"``) shows the
system tools under that harness's names and shapes (:mod:`envcraft.sandbox.profiles`);
the default, ``"envcraft"``, shows the canonical ones. Whatever the profile, what an
Episode records is the canonical call, so :meth:`Episode.trajectory` scores the same
through ``tasks score``. Under a harness profile the Claw environments' skills are
placed in the workspace as ``skills/<name>/`` (where OpenClaw looks for them) and
:meth:`Episode.skills_prompt` lists them as OpenClaw's system prompt does.

**Services.** A task that declares mock HTTP services (``provenance["services"]``, see
:mod:`envcraft.tasks.play.services`) gets them started for this episode alone, and their
tools exposed under the names the task declares; what they saw reaches the verifier as
``ctx["services"]``.

A call to a name the episode does not expose is recorded as a failed call to
``<profile>:<name>`` (no environment can declare such a name) and consumes one action
index, exactly as its replay does: an unknown name can never turn into a real call when
the trajectory is scored.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from envcraft.core.errors import ErrorCategory, ToolFailure, error_result
from envcraft.core.package import EnvPackage, PackageError, load_package
from envcraft.core.session import Session
from envcraft.core.skills import Skill, read_skill, skills_section
from envcraft.core.workspace import Workspace
from envcraft.sandbox.bwrap import SandboxUnavailable
from envcraft.sandbox.profiles import CANONICAL_PROFILE, Profile, get_profile
from envcraft.sandbox.profiles.bound import SessionCanonical
from envcraft.sandbox.services import ServiceError
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.outcome import Action, ExecutionError, Outcome, TurnSnapshot
from envcraft.tasks.play.pool import default_pool
from envcraft.tasks.play.services import EpisodeServices, declared_services

# Episodes are short-lived and touch many small files: a memory-backed scratch directory when
# there is one (several times faster than a disk-backed /tmp), else the default.
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
SESSIONS_DIR = "sessions"
WORKSPACE_DIR = "workspace"
COLLISION_SEPARATOR = "__"
SKILLS_DIR = "skills"


@dataclass(frozen=True)
class ExposedTool:
    """One tool as an agent sees it: the name it calls and the environment tool it reaches."""

    name: str
    env: str
    tool: str
    schema: dict[str, Any]
    system: bool
    profile: str | None = None  # set for a profile's system tool (``tool`` is then its own name)
    service: bool = False  # a tool of the task's mock services (an HTTP call, see ``services``)

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function-tool form under the exposed name."""
        function = dict(self.schema["function"])
        function["name"] = self.name
        return {"type": "function", "function": function}


class Episode:
    """One play of a task (see the module docstring). Use as a context manager or :meth:`close`."""

    def __init__(
        self,
        packages: Mapping[str, EnvPackage],
        initial_state: Mapping[str, Mapping[str, Any]],
        files: Mapping[str, str],
        *,
        turns: Sequence[str] = (),
        directory: str | Path | None = None,
        profile: str | Profile = CANONICAL_PROFILE,
        services: Mapping[str, Any] | None = None,
    ) -> None:
        """Open fresh sessions for ``packages`` from ``initial_state`` and ``files``.

        ``turns`` are the user messages, revealed one at a time by :meth:`end_turn`; an
        episode driven from a call list may leave them empty and still end turns.
        ``ExecutionError`` when a state is missing or does not validate, or a file path
        leaves the workspace; ``ValueError`` for an unknown ``profile``. ``services``: the
        task's declared mock services, started here (``ExecutionError`` when they cannot be).
        """
        self.profile = get_profile(profile)
        self.user_turns = list(turns)
        self.turn = 0
        self.actions: list[Action] = []
        self.snapshots: list[TurnSnapshot] = []
        self.packages = dict(packages)
        self._owned: Path | None = None
        self._skills: list[Skill] = []
        self.services: EpisodeServices | None = None
        self.directory = Path(directory) if directory is not None else None
        claw = any(p.kind == "claw" for p in packages.values())
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            workdir: Path | None = self.directory / WORKSPACE_DIR if claw else None
        elif claw:
            self._owned = workdir = Path(tempfile.mkdtemp(prefix="envcraft-episode-", dir=SCRATCH))
        else:
            workdir = None
        try:
            if workdir is not None:
                populate(workdir, files)
                if not self.profile.canonical:
                    self._skills = place_skills(workdir, packages.values(), self.profile)
            self.sessions = self._open_sessions(initial_state, workdir)
            if services:
                self.services = _start_services(services)
        except BaseException:
            self.close()
            raise
        self.workspace = Workspace(workdir) if workdir is not None else None
        self._files_without_workspace = dict(files)
        self.initial = {env: s.state() for env, s in self.sessions.items()}
        self.initial_files = self.files()
        # states and files change only through calls: (calls so far, the snapshot they left)
        self._latest = (0, TurnSnapshot(self.initial, self.initial_files))

    @classmethod
    def open(
        cls,
        task: Task,
        *,
        packages: Mapping[str, EnvPackage] | None = None,
        directory: str | Path | None = None,
        profile: str | Profile = CANONICAL_PROFILE,
    ) -> Episode:
        """Open ``task`` from its S0 and workspace files, its first user turn current.

        ``profile`` names the system tools' profile (``"openclaw"``, ``"claude-code"`` or
        the default ``"envcraft"``; ``envcraft.sandbox.profiles.DEFAULT_PROFILE`` is the one
        new rollouts and exports use).
        """
        found = resolve_packages(task, packages)
        return cls(
            found,
            task.initial_state,
            task.workspace,
            turns=[t.user for t in task.turns],
            directory=directory,
            profile=profile,
            services=declared_services(task.provenance),
        )

    @cached_property
    def _exposed(self) -> dict[str, ExposedTool]:
        """The agent-facing tool table, built on first use (plays from a call list never need it)."""
        exposed = exposed_tools(self.packages, self.profile)
        if self.services is not None:
            for name in self.services.tools:
                env = self.services.env_of(name)
                exposed[name] = ExposedTool(name, env, name, self.services.schema(name), False, service=True)
        return exposed

    def _open_sessions(
        self, initial_state: Mapping[str, Mapping[str, Any]], workdir: Path | None
    ) -> dict[str, Session]:
        sessions: dict[str, Session] = {}
        for env, package in self.packages.items():
            if env not in initial_state:
                raise ExecutionError(f"no initial state for environment '{env}'")
            shared = workdir if package.kind == "claw" else None
            state = dict(initial_state[env])
            try:
                if self.directory is None:  # the shared workspace is already populated
                    sessions[env] = default_pool.open(package, state, shared)
                else:
                    root = self.directory / SESSIONS_DIR / env
                    sessions[env] = Session.create(package, root, state=state, files={}, workspace_dir=shared)
            except ValueError as exc:
                first = str(exc).splitlines()[0]
                raise ExecutionError(f"initial state of '{env}' does not validate: {first}") from None
        return sessions

    # -- the agent's side ---------------------------------------------------------------
    @property
    def done(self) -> bool:
        """True once every user turn has been ended."""
        return self.turn >= len(self.user_turns)

    @property
    def user_message(self) -> str | None:
        """The current user turn's text (None past the last turn, or for a call-list episode)."""
        return self.user_turns[self.turn] if self.turn < len(self.user_turns) else None

    def tools(self) -> list[ExposedTool]:
        """What an agent may call in this episode (see the module docstring for the names)."""
        return list(self._exposed.values())

    def openai_tools(self) -> list[dict[str, Any]]:
        return [t.openai_schema() for t in self._exposed.values()]

    def call_exposed(self, name: str, args: Any) -> dict[str, Any]:
        """Call a tool by the name :meth:`tools` exposes; an unknown name is a failed call.

        An unknown name is refused by the task's first environment as a call to
        ``<profile>:<name>`` (no environment can declare such a name), consuming an action
        index: exactly what re-playing the recorded call does, so a live run and its
        re-scored trajectory see the same clock, and an unknown name never turns into a real
        call when the trajectory is scored.
        """
        exposed = self._exposed.get(name) if isinstance(name, str) else None
        if exposed is None:
            known = ", ".join(sorted(self._exposed))
            result = error_result(
                ErrorCategory.NOT_FOUND, f"unknown tool '{name}'; the tools here are: {known}", tool=name
            )
            first = next(iter(self.sessions))
            self._canonical(first).record_inert(self.profile.failure_name(str(name)), args, result)
            return result
        if exposed.profile is not None:
            return self.profile.call(exposed.tool, args, self._canonical(exposed.env))
        if exposed.service and self.services is not None:
            result = self.services.call(exposed.tool, args)
            self.actions.append(Action(self.turn, exposed.env, exposed.tool, args, result))
            return result
        return self.call(exposed.env, exposed.tool, args)

    def _canonical(self, env: str) -> SessionCanonical:
        """The profile tools' way into ``env``'s session: each call recorded in this turn."""

        def record(tool: str, args: Any, result: dict[str, Any]) -> None:
            self.actions.append(Action(self.turn, env, tool, args, result))

        return SessionCanonical(self.sessions[env], record)

    def skills(self) -> list[Skill]:
        """The skills placed in the workspace (none under the canonical profile)."""
        return list(self._skills)

    def skills_prompt(self) -> str:
        """The placed skills as OpenClaw's system prompt lists them ("" when there are none)."""
        return skills_section(self._skills, self.profile.read_tool)

    def call(
        self, env: str, tool: str, args: Any = None, *, provenance: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """One call in the current turn; the result or a structured error, never an exception."""
        session = self.sessions.get(env)
        if session is None:
            known = ", ".join(sorted(self.sessions))
            result = error_result(
                ErrorCategory.NOT_FOUND,
                f"unknown environment '{env}'; this task's environments: {known}",
                env=env,
            )
        elif not isinstance(tool, str) or not tool:
            result = error_result(ErrorCategory.INVALID_ARGUMENT, "a call must name a tool")
        else:
            result = session.call(tool, args if args is not None else {})
        self.actions.append(Action(self.turn, str(env), str(tool), args, result, dict(provenance or {})))
        return result

    def end_turn(self) -> str | None:
        """Close the current user turn (snapshot every state and the workspace) and reveal the next.

        Returns the next user message, or None when there is none.
        """
        self.snapshots.append(self._snapshot())
        self.turn += 1
        return self.user_message

    # -- what a verifier reads ------------------------------------------------------------
    def files(self) -> dict[str, str]:
        """The shared workspace now (a task without Claw environments keeps its S0 files)."""
        if self.workspace is None:
            return dict(self._files_without_workspace)
        return self.workspace.snapshot()

    def outcome(self) -> Outcome:
        """The run so far; turns not ended yet (or never reached) keep the current state."""
        snapshots = list(self.snapshots)
        total = max(len(self.user_turns), len(snapshots))
        now = self._snapshot()
        snapshots.extend(now for _ in range(total - len(snapshots)))
        return Outcome(
            initial=self.initial,
            final=now.final,
            initial_files=self.initial_files,
            files=now.files,
            turns=snapshots,
            actions=list(self.actions),
            packages={env: str(p.root) for env, p in self.packages.items()},
            services=self.services.record() if self.services is not None else {},
        )

    def trajectory(self, task_id: str) -> dict[str, Any]:
        """The calls made, grouped by user turn, in the format ``envcraft tasks score`` reads."""
        turns: list[list[dict[str, Any]]] = [[] for _ in range(max(len(self.user_turns), self.turn))]
        for action in self.actions:
            while action.turn >= len(turns):
                turns.append([])
            turns[action.turn].append({"env": action.env, "tool": action.tool, "args": action.args})
        return {"task_id": task_id, "turns": turns}

    def _snapshot(self) -> TurnSnapshot:
        """Every state and the workspace now; in memory, the last snapshot again when no call
        came since (the objects are shared: an outcome's readers copy before they change
        anything). Durable sessions are read again: another process may have called them."""
        calls, latest = self._latest
        if calls != len(self.actions) or self.directory is not None:
            if not self.sessions:  # closed: its in-memory sessions went back to the pool
                raise ExecutionError("the episode is closed; take its outcome before closing it")
            latest = TurnSnapshot({env: s.state() for env, s in self.sessions.items()}, self.files())
            self._latest = (len(self.actions), latest)
        return latest

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        """Release the sessions and the temporary workspace (a durable directory is kept)."""
        for session in getattr(self, "sessions", {}).values():
            if self.directory is None:
                default_pool.release(session)  # rewound for the next play of this S0
            else:
                session.close()
        self.sessions = {}
        if getattr(self, "services", None) is not None:
            self.services.close()  # type: ignore[union-attr]
            self.services = None
        if self._owned is not None:
            shutil.rmtree(self._owned, ignore_errors=True)
            self._owned = None

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _start_services(spec: Mapping[str, Any]) -> EpisodeServices:
    try:
        return EpisodeServices(spec)
    except (ServiceError, SandboxUnavailable, ValueError, KeyError, OSError) as exc:
        raise ExecutionError(f"the task's mock services did not start: {exc}") from None


def resolve_packages(task: Task, packages: Mapping[str, EnvPackage] | None = None) -> dict[str, EnvPackage]:
    """The package of each of the task's environments (explicit, recorded path, or built-in id)."""
    recorded = task.provenance.get("packages", {}) if isinstance(task.provenance, dict) else {}
    found: dict[str, EnvPackage] = {}
    for env in task.envs:
        if packages is not None and env in packages:
            found[env] = packages[env]
            continue
        ref = recorded.get(env, env) if isinstance(recorded, dict) else env
        try:
            found[env] = load_package(ref)
        except PackageError as exc:
            raise ExecutionError(f"task {task.id}: {exc}") from None
    return found


def populate(root: Path, files: Mapping[str, str]) -> None:
    """Write S0's files into a directory (paths confined like any workspace path).

    Into an empty directory (a play's own) the files are written straight away: every path is
    normalized (no ``..``, nothing absolute) and every component below the root is made here,
    so none can be a symbolic link; a directory that already holds something is written through
    :meth:`Workspace.resolve`, which refuses links that lead out.
    """
    root.mkdir(parents=True, exist_ok=True)
    with os.scandir(root) as entries:
        workspace = Workspace(root) if next(entries, None) is not None else None
    made: set[str] = set()
    for rel, content in files.items():
        try:
            path = Workspace.normalize(rel)
            if path == ".":
                raise ToolFailure(ErrorCategory.INVALID_ARGUMENT, "is the workspace root")
            target = str(workspace.resolve(path)) if workspace is not None else os.path.join(root, path)
        except ToolFailure as failure:
            raise ExecutionError(f"workspace file {rel!r}: {failure.message}") from None
        parent = os.path.dirname(target)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(content)


def place_skills(root: Path, packages: Iterable[EnvPackage], profile: Profile) -> list[Skill]:
    """Copy each Claw package's ``skills/<name>/`` into the workspace, as OpenClaw finds them.

    A task file already at a skill's path is kept (the task's workspace wins); a skill whose
    front matter cannot be read is left out of the listing (``envs check`` reports it).
    """
    placed: list[Skill] = []
    seen: set[str] = set()
    for package in packages:
        if package.kind != "claw":
            continue
        for name, skill_md in package.skills.items():
            target = root / SKILLS_DIR / name
            if name in seen or target.exists():
                continue
            seen.add(name)
            shutil.copytree(skill_md.parent, target, symlinks=False)
            location = profile.skill_location(f"{SKILLS_DIR}/{name}/SKILL.md")
            try:
                placed.append(read_skill(target, location))
            except Exception:  # skills_ref.SkillError and YAML errors: listed by envs check
                continue
    return placed


def exposed_tools(
    packages: Mapping[str, EnvPackage], profile: str | Profile = CANONICAL_PROFILE
) -> dict[str, ExposedTool]:
    """The agent-facing tool table: system tools once, domain tools prefixed only on a clash.

    What :meth:`Episode.tools` lists, without opening sessions (exporters use it).
    """
    chosen = get_profile(profile)
    owners: dict[str, list[str]] = {}
    for env, package in packages.items():
        for name, spec in package.env_class.tools.items():
            if spec.annotations.exclusive:
                owners.setdefault(name, []).append(env)
    exposed: dict[str, ExposedTool] = {}
    claw = next((env for env, p in packages.items() if p.kind == "claw"), None)
    if claw is not None and not chosen.canonical:
        for ptool in chosen.tools:
            exposed[ptool.name] = ExposedTool(
                ptool.name, claw, ptool.name, ptool.openai_schema(), True, chosen.name
            )
    for env, package in packages.items():
        for name, spec in package.env_class.tools.items():
            system = not spec.annotations.exclusive
            if system and (name in exposed or not chosen.canonical):
                continue  # the shared workspace's tool, bound once (or replaced by the profile's)
            shown = name if system or len(owners[name]) == 1 else f"{env}{COLLISION_SEPARATOR}{name}"
            exposed[shown] = ExposedTool(shown, env, name, spec.openai_schema(), system)
    return exposed
