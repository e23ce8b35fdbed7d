"""`envcraft llm serve|answer`: a model over the OpenAI protocol, and batch answers (wiring only)."""

from __future__ import annotations

import asyncio
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from envcraft.cli.agents import (
    BaseUrl,
    Concurrency,
    JsonFlag,
    Model,
    batch_provider,
    load_tasks,
    model_provider,
)
from envcraft.cli.output import console, die, err_console, print_json
from envcraft.llm.batch import REQUESTS_FILE, RESPONSES_DIR, answer_batch
from envcraft.llm.provider import Provider
from envcraft.llm.server import ChatServer
from envcraft.rollout.models import LOCAL_MODELS
from envcraft.rollout.policies import policy_provider

# -- envcraft llm serve -------------------------------------------------------------------------
llm_app = typer.Typer(
    help="Language models: serve an in-process model over the OpenAI protocol, answer batch files.",
    no_args_is_help=True,
)


@llm_app.command("serve")
def serve(
    model: Annotated[str, typer.Argument(help="smollm2, random, or oracle (with --tasks).")],
    tasks_dir: Annotated[Path | None, typer.Option("--tasks", help="Task set the oracle plays.")] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free one).")] = 8000,
) -> None:
    """Serve a built-in model at http://HOST:PORT/v1 (chat completions with tools) until interrupted."""
    if model not in LOCAL_MODELS:
        die(f"unknown model {model!r}; built in: {', '.join(LOCAL_MODELS)}")
    if model == "oracle" and tasks_dir is None:
        die("the oracle plays a task set: give --tasks DIR")
    tasks = load_tasks(tasks_dir) if tasks_dir is not None else []
    inner = _smollm_provider() if model == "smollm2" else policy_provider(model, tasks)
    try:
        server = ChatServer(inner, host=host, port=port).start()
    except OSError as exc:
        die(f"cannot listen on {host}:{port}: {exc.strerror}")
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    err_console.print(
        f"serving {model} at {server.url} (Ctrl-C or SIGTERM stops)", highlight=False, soft_wrap=True
    )
    try:
        while not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


@llm_app.command("answer")
def answer(
    batch: Annotated[Path, typer.Argument(help="Batch directory (holding requests.jsonl).")],
    model: Model,
    base_url: BaseUrl = None,
    tasks_dir: Annotated[Path | None, typer.Option("--tasks", help="Task set the oracle plays.")] = None,
    concurrency: Concurrency = 8,
    json_out: JsonFlag = False,
) -> None:
    """Answer BDIR/requests.jsonl with a model (every request sent as --model), as the Batch API
    would: the output goes to BDIR/responses/ and the stage that wrote the requests continues when
    run again. A request the model could not answer for now (unreachable, overloaded) stays waiting."""
    requests = batch / REQUESTS_FILE
    if not requests.is_file():
        die(f"{requests}: no such file (run a stage with --batch {batch} first)")
    if model == "oracle" and tasks_dir is None:
        die("the oracle plays a task set: give --tasks DIR")
    tasks = load_tasks(tasks_dir) if tasks_dir is not None else []
    if not batch_provider(model, None, batch).pending:  # drops requests answered since the stage ran
        console.print(f"nothing waits in {requests}", highlight=False, soft_wrap=True)
        return
    target = _free_output(batch / RESPONSES_DIR)
    with model_provider(model, tasks, base_url, None, concurrency) as provider:

        async def main() -> dict[str, int]:
            try:
                return await answer_batch(
                    requests, target, provider, concurrency=concurrency, model=model, skip_retryable=True
                )
            finally:
                await provider.aclose()

        with console.status(f"answering {requests} with {model}"):
            counts = asyncio.run(main())
    if counts["skipped"] and not counts["answered"] + counts["failed"]:
        target.unlink()
        die(f"no answer to any of {counts['skipped']} requests (is {model} reachable?); they stay waiting", 1)
    if json_out:
        print_json({**counts, "output": str(target)})
    else:
        console.print(
            f"answered {counts['answered']}, failed {counts['failed']}, still waiting {counts['skipped']}: "
            f"{target}",
            highlight=False,
            soft_wrap=True,
        )


def _free_output(directory: Path) -> Path:
    """``DIR/answers-N.jsonl`` with the first N not taken (earlier answers stay)."""
    number = 1
    while (directory / f"answers-{number}.jsonl").exists():
        number += 1
    return directory / f"answers-{number}.jsonl"


def _smollm_provider() -> Provider:
    from envcraft.llm.smollm import SmolLM2Provider

    return SmolLM2Provider()
