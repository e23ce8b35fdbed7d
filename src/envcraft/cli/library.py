"""`envcraft library add|check|readme|unpack`: the environment library (wiring only)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from envcraft.cli.output import console, count, die, print_json
from envcraft.synth import library
from envcraft.synth.library import LibraryError

app = typer.Typer(
    help="The environment library: synthesized packages kept with the model answers they came from.",
    no_args_is_help=True,
)
LibraryDir = Annotated[
    Path | None,
    typer.Option("--library", help="Library directory (default: $ENVCRAFT_LIBRARY, else library/)."),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


@app.command("add")
def add(
    out: Annotated[Path, typer.Argument(help="An `envcraft synth` output directory.")],
    batch: Annotated[
        Path | None,
        typer.Option("--batch", help="The run's Batch API directory (its answers); else OUT/.cache/llm."),
    ] = None,
    root: LibraryDir = None,
    json_out: JsonFlag = False,
) -> None:
    """Add a synth run: its accepted packages (with record, spec and answers) and every final
    candidate for the funnel; then regenerate the library's README.

    Refused, with nothing written, if any package differs from what re-parsing its answers gives.
    """
    target = root or library.default_root()
    try:
        result = library.add(target, out, batch)
    except LibraryError as exc:
        die(str(exc))
    except OSError as exc:
        die(f"cannot write the library {target}: {exc.strerror or exc}")
    if json_out:
        print_json({"library": str(target), **asdict(result)})
        return
    console.print(
        f"{count(len(result.added), 'environment')} added, {len(result.replaced)} replaced, "
        f"{len(result.unchanged)} unchanged; {count(result.new_candidates, 'new candidate')} in the "
        f"funnel; {len(result.unfinished)} not finished (not added); {target / 'README.md'}",
        highlight=False,
        soft_wrap=True,
    )


@app.command("check")
def check(root: LibraryDir = None, json_out: JsonFlag = False) -> None:
    """Re-parse every recorded answer and compare each package byte for byte (exit 1 on a mismatch)."""
    target = root or library.default_root()
    results: dict[str, str] = {}
    for path in library.archives(target):
        try:
            library.check(library.read_entry(path))
            results[path.name] = "ok"
        except LibraryError as exc:
            results[path.name] = str(exc)
    failed = {name: why for name, why in results.items() if why != "ok"}
    if json_out:
        print_json({"library": str(target), "packages": len(results), "failed": failed})
    else:
        for why in failed.values():
            console.print(why, highlight=False, soft_wrap=True)
        console.print(
            f"{len(results) - len(failed)} of {len(results)} library packages are byte for byte "
            "what their answers give"
        )
    raise typer.Exit(1 if failed else 0)


@app.command("readme")
def readme(
    root: LibraryDir = None,
    run: Annotated[
        Path | None,
        typer.Option("--run", help="An `envcraft run --envs library` output: its tasks per environment."),
    ] = None,
) -> None:
    """Regenerate the library's README.md from its records (and a run's tasks per environment)."""
    try:
        path = library.write_readme(root or library.default_root(), run)
    except LibraryError as exc:
        die(str(exc))
    console.print(str(path), highlight=False, soft_wrap=True)


@app.command("unpack")
def unpack(
    root: LibraryDir = None,
    cache: Annotated[
        Path | None,
        typer.Option("--cache", help="Cache directory (default: $ENVCRAFT_CACHE or ~/.cache/envcraft)."),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Unpack every library package into the cache (as `--envs library` does) and list the directories."""
    try:
        paths = library.unpacked(root or library.default_root(), cache)
    except LibraryError as exc:
        die(str(exc))
    if json_out:
        print_json([str(p) for p in paths])
        return
    for path in paths:
        console.print(str(path), highlight=False, soft_wrap=True)


LIBRARY_REF = "library"  # what `--envs` / `envs check` take for every library environment


def is_library_ref(ref: str | None) -> bool:
    """``library`` names the library, unless it is a package directory here (a path wins, as before)."""
    return ref == LIBRARY_REF and not (Path(ref) / "envcraft.toml").is_file()


def library_envs() -> list[str]:
    """The unpacked directories of every library package (exit 2 for an empty or broken library)."""
    root = library.default_root()
    try:
        paths = library.unpacked(root)
    except LibraryError as exc:
        die(str(exc))
    if not paths:
        die(f"the library {root} holds no environments (envcraft library add SYNTH_OUT)")
    return [str(p) for p in paths]
