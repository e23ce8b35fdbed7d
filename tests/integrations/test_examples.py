"""The VERL example: its YAML composes under VERL's own trainer config, and its script exports
the task set and calls VERL's trainer with overrides that compose too (the trainer itself needs
a GPU, so the script's ``python`` is replaced by a recorder)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl")

import verl
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from verl.utils.config import omega_conf_to_dataclass

from envcraft.tasks.format.io import write_tasks
from envcraft.tasks.format.model import Task

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CONFIG_DIR = EXAMPLES / "verl"
TABLE_17 = {"optimizer": "AdamW", "lr": 1e-6, "lr_scheduler_type": "constant", "weight_decay": 0.01}


def leaves(tree: Any, prefix: str = "") -> list[str]:
    if not isinstance(tree, dict):
        return [prefix]
    return [
        leaf for key, value in tree.items() for leaf in leaves(value, f"{prefix}.{key}" if prefix else key)
    ]


def composed(overrides: list[str] | None = None) -> Any:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="envcraft_grpo", overrides=overrides or [])


def test_every_key_of_the_example_is_one_of_verls_own() -> None:
    ours = yaml.safe_load((CONFIG_DIR / "envcraft_grpo.yaml").read_text())
    ours.pop("hydra")
    ours.pop("defaults")
    reference = OmegaConf.to_container(
        OmegaConf.load(Path(verl.__file__).parent / "trainer/config/_generated_ppo_trainer.yaml")
    )
    unknown = []
    for path in leaves(ours):
        node: Any = reference
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                unknown.append(path)
                break
            node = node[part]
    assert unknown == []


def test_the_example_composes_with_the_papers_optimizer_and_our_agent_loop() -> None:
    config = composed()
    optim = config.actor_rollout_ref.actor.optim
    assert {k: optim[k] for k in TABLE_17} == TABLE_17
    assert optim.lr_warmup_steps == 0 and optim.lr_warmup_steps_ratio == 0.0
    typed = omega_conf_to_dataclass(optim)
    assert type(typed).__name__ == "FSDPOptimizerConfig" and typed.lr == 1e-6
    assert config.algorithm.adv_estimator == "grpo"
    rollout = config.actor_rollout_ref.rollout
    assert rollout.multi_turn.enable and rollout.multi_turn.format == "hermes" and rollout.n == 8
    assert rollout.agent.default_agent_loop == "envcraft_agent"
    # VERL loads envcraft's dataset class, whose length filter counts each row's tools
    from verl.utils.dataset.rl_dataset import get_dataset_class

    from envcraft.integrations.verl.dataset import EnvcraftRLHFDataset

    assert get_dataset_class(config.data) is EnvcraftRLHFDataset and config.data.filter_overlong_prompts


def test_the_script_exports_and_calls_verls_trainer(tmp_path: Path, train_tasks: list[Task]) -> None:
    write_tasks(tmp_path / "tasks", train_tasks)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "python-argv"
    recorder = bin_dir / "python"
    recorder.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(record))}\n')
    recorder.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env["OUT"] = str(tmp_path / "verl")
    done = subprocess.run(
        [str(EXAMPLES / "verl_grpo.sh"), str(tmp_path / "tasks"), "trainer.total_training_steps=2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    argv = record.read_text().splitlines()
    assert argv[:2] == ["-m", "verl.trainer.main_ppo"]
    assert argv[argv.index("--config-path") + 1] == str(CONFIG_DIR)
    overrides = [a for a in argv if "=" in a]
    data = tmp_path / "verl" / "data"
    assert f"data.train_files={data}/train.parquet" in overrides
    for name in ("train.parquet", "val.parquet", "tasks.jsonl", "agent_loop.yaml"):
        assert (data / name).is_file()
    config = composed(overrides)
    assert config.trainer.total_training_steps == 2
    assert config.actor_rollout_ref.rollout.agent.agent_loop_config_path == f"{data}/agent_loop.yaml"
    assert config.actor_rollout_ref.model.path == "Qwen/Qwen2.5-1.5B-Instruct"
