"""VERL on CPU: its RLHFDataset loads our export, its AgentLoopWorker runs our agent loop.

The model is the one edge this machine cannot reach, so it is replaced the way VERL's own
``*_on_cpu.py`` tests replace it: a server manager whose ``generate`` returns scripted token
ids. Everything else is VERL's: the dataset, the collate function, ``DataProto``, the worker
that instantiates the loop from ``agent_loop.yaml`` through hydra, the Continuous Token
builder, the hermes tool parser, the padding and the ``rm_scores`` assembly.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("verl")

import torch
import verl
from omegaconf import DictConfig, OmegaConf
from transformers import Qwen2Config
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker, DictConfigWrap
from verl.protocol import DataProto
from verl.utils import hf_tokenizer
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.replica import TokenOutput

from envcraft.integrations.taskset import TaskLookupError
from envcraft.integrations.verl.agent_loop import EnvcraftAgentLoop, open_plays
from envcraft.integrations.verl.dataset import EnvcraftRLHFDataset, prompt_length, row_tools
from envcraft.integrations.verl.reward import compute_score
from envcraft.rollout.loop import RolloutConfig
from envcraft.sandbox.profiles import SYSTEM_TOOLS, profile_call
from envcraft.tasks.corpus.export import export, system_prompt
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import Episode
from envcraft.tasks.play.execute import execute, execute_reference
from envcraft.tasks.play.prompts import system_prompt as rollout_system_prompt
from envcraft.tasks.verifier.scoring import score_trajectory

PROMPT_LENGTH = 8192
PROFILE = "openclaw"  # the export's and the loop's default
END = "<|im_end|>"
Script = list[str]


@dataclass
class Setup:
    export_dir: Path
    model_dir: Path
    tasks: dict[str, Task]
    train_ids: list[str]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, train_tasks: list[Task], policy_tokenizer: Any) -> Setup:
    root = tmp_path_factory.mktemp("verl")
    export(train_tasks, "verl", root / "export", val_fraction=0.2)
    model_dir = root / "model"
    # VERL reads the model's config (its model_type picks the Continuous Token builder: Qwen's
    # ChatML boundaries here) and its tokenizer; no weights are loaded on this path.
    Qwen2Config(
        vocab_size=len(policy_tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        architectures=["Qwen2ForCausalLM"],
    ).save_pretrained(model_dir)
    policy_tokenizer.save_pretrained(model_dir)
    ds = dataset(
        root / "export" / "train.parquet", policy_tokenizer, trainer_config(model_dir, root / "export")
    )
    train_ids = [ds[i]["extra_info"]["task_id"] for i in range(len(ds))]
    return Setup(root / "export", model_dir, {t.id: t for t in train_tasks}, train_ids)


def trainer_config(model_dir: Path, export_dir: Path, response_length: int = 4096) -> DictConfig:
    """VERL's own generated PPO trainer config with the multi-turn rollout options set."""
    config = OmegaConf.load(Path(verl.__file__).parent / "trainer/config/_generated_ppo_trainer.yaml")
    config.actor_rollout_ref.model.path = str(model_dir)
    rollout = config.actor_rollout_ref.rollout
    rollout.name = "vllm"  # never started: the server manager below answers
    rollout.prompt_length = PROMPT_LENGTH
    rollout.response_length = response_length
    rollout.multi_turn.enable = True
    rollout.multi_turn.format = "hermes"
    rollout.multi_turn.max_tool_response_length = 4096
    rollout.agent.agent_loop_config_path = str(export_dir / "agent_loop.yaml")
    config.data.max_prompt_length = PROMPT_LENGTH
    return config


def dataset(path: Path, tokenizer: Any, config: DictConfig) -> RLHFDataset:
    return RLHFDataset([str(path)], tokenizer, config.data)


def tool_names(task: Task) -> dict[tuple[str, str], str]:
    """The names an agent of the export's profile (openclaw, the default) calls the task's tools by."""
    with Episode.open(task, profile=PROFILE) as episode:
        return {(t.env, t.tool): t.name for t in episode.tools()}


def model_call(
    names: dict[tuple[str, str], str], env: str, tool: str, args: dict[str, Any]
) -> dict[str, Any]:
    """A reference call as the model makes it: a system tool in the profile's shape."""
    if tool in SYSTEM_TOOLS:
        name, args = profile_call(PROFILE, tool, args)
        return {"name": name, "arguments": args}
    return {"name": names[(env, tool)], "arguments": args}


def golden(task: Task) -> Script:
    """The golden run as model turns: one tool call a turn, then an answer that ends the user turn."""
    names = tool_names(task)
    turns: Script = []
    for turn in range(len(task.turns)):
        for call in (c for c in task.reference.calls if c.turn == turn):
            body = json.dumps(model_call(names, call.env, call.tool, call.args))
            turns.append(f"<tool_call>\n{body}\n</tool_call>{END}")
        turns.append(f"That is done.{END}")
    return turns


def idle(task: Task) -> Script:
    """A polite agent that never acts: every user turn answered without a tool call."""
    return [f"I cannot help with that.{END}" for _ in task.turns]


def skips_last_turn(task: Task) -> Script:
    """The golden run except the last user turn's calls (a plausible, lazy agent)."""
    script = golden(task)
    last = len(task.turns) - 1
    kept = sum(1 for c in task.reference.calls if c.turn == last)
    return [*script[: len(script) - 1 - kept], f"That is done.{END}"]


class ScriptedServer:
    """A server manager whose model follows a script: the k-th trajectory of a prompt to reach
    the server gets the k-th script for it (``policy[request_id]`` = k)."""

    def __init__(self, tokenizer: Any, scripts: dict[str, list[Script]]) -> None:
        self.tokenizer = tokenizer
        self.scripts = scripts
        self.started: dict[str, int] = defaultdict(int)
        self.queues: dict[str, Script] = {}
        self.policy: dict[str, int] = {}
        self.generated: dict[str, list[int]] = defaultdict(list)
        self.prompts: dict[str, list[list[int]]] = defaultdict(list)
        self.priorities: dict[str, set[int]] = defaultdict(set)

    async def generate(
        self,
        request_id: str,
        *,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        priority: int = 0,
        **_: Any,
    ) -> TokenOutput:
        if request_id not in self.queues:
            text = self.tokenizer.decode(prompt_ids)
            key = next(k for k in self.scripts if k in text)
            self.policy[request_id] = self.started[key] % len(self.scripts[key])
            self.queues[request_id] = list(self.scripts[key][self.policy[request_id]])
            self.started[key] += 1
        self.prompts[request_id].append(list(prompt_ids))
        self.priorities[request_id].add(priority)
        ids = self.tokenizer.encode(self.queues[request_id].pop(0), add_special_tokens=False)
        self.generated[request_id] += ids
        # a busy server: every request was preempted once before it finished
        return TokenOutput(token_ids=ids, log_probs=[-0.25] * len(ids), num_preempted=1)


def changes_the_outcome(task: Task, turns: list[list[dict[str, Any]]]) -> bool:
    """Whether ``turns`` end in another final state or workspace than the golden run."""
    mine, gold = execute(task, turns), execute_reference(task)
    return (mine.final, mine.files) != (gold.final, gold.files)


def rollout(
    setup: Setup,
    tokenizer: Any,
    policies: list[Callable[[Task], Script]],
    response_length: int = 4096,
) -> tuple[DataProto, ScriptedServer]:
    """One GRPO rollout step: every train row, ``len(policies)`` samples each, through VERL's worker."""
    config = trainer_config(setup.model_dir, setup.export_dir, response_length)
    rows = dataset(setup.export_dir / "train.parquet", tokenizer, config)
    scripts = {}
    for task_id in setup.train_ids:
        task = setup.tasks[task_id]
        scripts[task.turns[0].user] = [policy(task) for policy in policies]
    server = ScriptedServer(tokenizer, scripts)
    worker = AgentLoopWorker(config, llm_client=server)
    batch = DataProto.from_single_dict(collate_fn([rows[i] for i in range(len(rows))]))
    batch = batch.repeat(repeat_times=len(policies), interleave=True)
    # VERL's AgentLoopManager numbers the samples of a batch (their scheduling priority)
    batch.non_tensor_batch["priority"] = np.arange(len(batch), dtype=np.int64)
    return asyncio.run(worker.generate_sequences(batch)), server


def test_verl_dataset_loads_the_export_as_is(setup: Setup, policy_tokenizer: Any) -> None:
    config = trainer_config(setup.model_dir, setup.export_dir)
    train = dataset(setup.export_dir / "train.parquet", policy_tokenizer, config)
    val = dataset(setup.export_dir / "val.parquet", policy_tokenizer, config)
    assert len(train) + len(val) == len(setup.tasks) and len(val) >= 1
    row = train[0]
    task = setup.tasks[row["extra_info"]["task_id"]]
    assert row["agent_name"] == "envcraft_agent"
    assert [m["role"] for m in row["raw_prompt"]] == ["system", "user"]
    assert row["raw_prompt"][1]["content"] == task.turns[0].user
    assert row["extra_info"]["tool_selection"] == list(tool_names(task).values())
    assert row["extra_info"]["profile"] == PROFILE
    for each in setup.tasks.values():  # prompted as `eval` prompts it: skills listed under the profile
        with Episode.open(each, profile=PROFILE) as episode:
            mode = RolloutConfig().mode_for(each)
            skills = episode.skills_prompt() if mode == "claw" else None
            assert system_prompt(each, episode.packages, profile=PROFILE) == rollout_system_prompt(
                episode.packages, mode, skills=skills
            )
            assert mode != "claw" or "<available_skills>" in (skills or "")
    assert json.loads(row["reward_model"]["ground_truth"])["task_id"] == task.id


def test_agent_loop_plays_each_trajectory_in_its_own_sessions_to_the_verifier_reward(
    setup: Setup, policy_tokenizer: Any
) -> None:
    policies = [golden, idle, skips_last_turn]
    out, server = rollout(setup, policy_tokenizer, policies)
    records = list(out.non_tensor_batch["envcraft"])
    assert len(records) == len(setup.train_ids) * len(policies)
    assert len({r["request_id"] for r in records}) == len(records) == len(server.generated)
    assert open_plays() == 0
    # VERL's contract: each sample's priority reaches every request of its trajectory, and the
    # preemptions of those requests are summed into the sample's num_preempted metric
    assert sorted(p for r in records for p in server.priorities[r["request_id"]]) == list(range(len(records)))
    for record, metrics in zip(records, out.meta_info["metrics"], strict=True):
        assert metrics["num_preempted"] == len(server.prompts[record["request_id"]])
    rm = out.batch["rm_scores"]
    mask = out.batch["response_mask"]
    responses = out.batch["responses"]
    attention = out.batch["attention_mask"][:, PROMPT_LENGTH:]
    lazy_and_caught = 0
    for i, record in enumerate(records):
        task = setup.tasks[record["task_id"]]
        policy = policies[server.policy[record["request_id"]]]
        # the reward is the verifier's, placed on the last response token
        valid = int(attention[i].sum())
        assert float(rm[i].sum()) == pytest.approx(record["score"])
        assert float(rm[i, valid - 1]) == pytest.approx(record["score"])
        # an independent referee: the recorded calls replayed in fresh sessions score the same
        replayed = score_trajectory(task, record["trajectory"])
        assert replayed.score == pytest.approx(record["score"])
        # response_mask is 1 exactly on what the model generated
        model_tokens = responses[i][mask[i].bool()].tolist()
        assert model_tokens == server.generated[record["request_id"]]
        observed = policy_tokenizer.decode(responses[i][:valid][~mask[i][:valid].bool()].tolist())
        for later in task.turns[1 : record["turns_completed"]]:
            assert later.user in observed
        if policy is golden:
            assert record["score"] == 1.0 and record["stop"] == "done"
            assert record["turns_completed"] == len(task.turns) and record["tool_errors"] == 0
            assert record["tool_calls"] == len(task.reference.calls)
            assert "<tool_response>" in observed
        elif policy is idle:
            assert record["score"] < 1.0 and record["tool_calls"] == 0
            assert record["turns_completed"] == len(task.turns)
        elif changes_the_outcome(task, record["trajectory"]):
            # the lazy agent left work undone that the golden run does: it must not be paid in full
            assert record["score"] < 1.0
            lazy_and_caught += 1
    assert lazy_and_caught >= 1  # the lazy agent's check above is not vacuous
    # the same prompt's samples were isolated: golden next to idle, each scored on its own state
    by_task = defaultdict(list)
    for record in records:
        by_task[record["task_id"]].append(record["score"])
    assert all(max(scores) == 1.0 and min(scores) < 1.0 for scores in by_task.values())


def test_compute_score_rescores_the_recorded_trajectory(setup: Setup, policy_tokenizer: Any) -> None:
    out, _ = rollout(setup, policy_tokenizer, [golden, idle])
    tasks_file = str(setup.export_dir / "tasks.jsonl")
    for i, record in enumerate(out.non_tensor_batch["envcraft"]):
        extra = {**out.non_tensor_batch["extra_info"][i], "envcraft": record}
        ground_truth = out.non_tensor_batch["reward_model"][i]["ground_truth"]
        source = out.non_tensor_batch["data_source"][i]
        result = compute_score(source, "(decoded text)", ground_truth, extra, tasks=tasks_file)
        assert result["score"] == pytest.approx(record["score"])
        assert set(result) == {"score", "envcraft_tool_calls", "envcraft_turns_completed"}
    with pytest.raises(ValueError, match="no envcraft trajectory"):
        compute_score("envcraft/notes_desk", "text", ground_truth, {}, tasks=tasks_file)
    with pytest.raises(ValueError, match="not an envcraft task"):
        compute_score("openai/gsm8k", "text", "42", {}, tasks=tasks_file)


def test_a_long_trajectory_stops_at_the_response_budget_and_is_still_scored(
    setup: Setup, policy_tokenizer: Any
) -> None:
    out, _ = rollout(setup, policy_tokenizer, [golden], response_length=160)
    records = list(out.non_tensor_batch["envcraft"])
    assert out.batch["responses"].shape[1] == 160
    assert any(r["stop"] == "response_length" for r in records)
    for i, record in enumerate(records):
        assert float(out.batch["rm_scores"][i].sum()) == pytest.approx(record["score"])
        assert int(out.batch["attention_mask"][i, PROMPT_LENGTH:].sum()) <= 160
        if record["stop"] == "response_length":
            task = setup.tasks[record["task_id"]]
            # cut short: less than the golden run was done, and it is scored on what was done
            calls = sum(len(turn) for turn in record["trajectory"])
            assert record["turns_completed"] < len(task.turns) or calls < len(task.reference.calls)
            assert score_trajectory(task, record["trajectory"]).score == pytest.approx(record["score"])
    assert open_plays() == 0


def test_the_loop_refuses_what_would_train_on_nothing(
    setup: Setup, policy_tokenizer: Any, train_tasks: list[Task]
) -> None:
    config = trainer_config(setup.model_dir, setup.export_dir)
    rows = dataset(setup.export_dir / "train.parquet", policy_tokenizer, config)
    row = rows[0]
    server = ScriptedServer(policy_tokenizer, {})

    def make(tokenizer: Any) -> EnvcraftAgentLoop:
        return EnvcraftAgentLoop(
            trainer_config=DictConfigWrap(config),
            server_manager=server,
            tokenizer=tokenizer,
            processor=None,
            dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(config.data),
            tasks=str(setup.export_dir),
        )

    # a chat template that drops the tools would train a policy that never saw them
    bare = type(policy_tokenizer).from_pretrained(setup.model_dir)
    bare.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    )
    with pytest.raises(ValueError, match="does not render tools"):
        asyncio.run(make(bare).run({}, **row))
    # a row whose task changed since the export is refused, not scored against the new version
    stale = dict(row)
    truth = json.loads(row["reward_model"]["ground_truth"])
    stale["reward_model"] = {"style": "rule", "ground_truth": json.dumps({**truth, "sha256": "0" * 64})}
    with pytest.raises(TaskLookupError, match="changed since the row was exported"):
        asyncio.run(make(policy_tokenizer).run({}, **stale))
    assert open_plays() == 0


def test_through_the_plugin_entry_point_alone_the_tasks_come_from_envcraft_tasks(
    setup: Setup, policy_tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = trainer_config(setup.model_dir, setup.export_dir)
    config.actor_rollout_ref.rollout.agent.agent_loop_config_path = None  # no agent_loop.yaml
    loop = EnvcraftAgentLoop(
        trainer_config=DictConfigWrap(config),
        server_manager=ScriptedServer(policy_tokenizer, {}),
        tokenizer=policy_tokenizer,
        processor=None,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
    )
    monkeypatch.delenv("ENVCRAFT_TASKS", raising=False)
    with pytest.raises(TaskLookupError, match=r"agent_loop_config_path.*ENVCRAFT_TASKS"):
        loop.task_index()
    monkeypatch.setenv("ENVCRAFT_TASKS", str(setup.export_dir))
    assert len(loop.task_index()) == len(setup.tasks)


def test_a_broken_agent_loop_import_is_reported_not_swallowed() -> None:
    probe = (
        "import sys\n"
        "sys.modules['envcraft.integrations.verl.agent_loop'] = None  # its import now fails\n"
        "import verl\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]  # VERL itself carries on
    assert "envcraft's VERL agent loop (envcraft_agent) could not be imported" in done.stderr, done.stderr[
        -2000:
    ]


def test_verl_finds_the_loop_through_its_plugin_entry_point() -> None:
    probe = (
        "import verl\n"
        "from verl.experimental.agent_loop.agent_loop import _agent_loop_registry as r\n"
        "print(r.get('envcraft_agent'))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    target = "envcraft.integrations.verl.agent_loop.EnvcraftAgentLoop"
    assert done.stdout.strip().splitlines()[-1] == str({"_target_": target})


def test_rewards_are_torch_floats_the_trainer_can_use(setup: Setup, policy_tokenizer: Any) -> None:
    out, _ = rollout(setup, policy_tokenizer, [golden])
    assert out.batch["rm_scores"].dtype == torch.float32
    assert out.batch["response_mask"].dtype in (torch.int64, torch.long)
    assert out.meta_info["reward_extra_keys"] == [
        "envcraft_score",
        "envcraft_tool_calls",
        "envcraft_tool_errors",
        "envcraft_turns_completed",
    ]


def test_the_length_filter_counts_the_tools_the_loop_renders(setup: Setup, policy_tokenizer: Any) -> None:
    out, server = rollout(setup, policy_tokenizer, [golden])
    policy_tokenizer = hf_tokenizer(str(setup.model_dir))  # what VERL's trainer and worker load
    path = setup.export_dir / "train.parquet"
    rows = {r["extra_info"]["task_id"]: r for r in pq.read_table(path).to_pylist()}
    # what the filter counts is exactly the loop's first request: the chat and the task's tools
    for record in out.non_tensor_batch["envcraft"]:
        row = rows[record["task_id"]]
        first = server.prompts[record["request_id"]][0]
        assert prompt_length(policy_tokenizer, row["prompt"], row_tools(row["extra_info"])) == len(first)
    bare = {i: prompt_length(policy_tokenizer, r["prompt"], None) for i, r in rows.items()}
    full = {
        i: prompt_length(policy_tokenizer, r["prompt"], row_tools(r["extra_info"])) for i, r in rows.items()
    }
    config = trainer_config(setup.model_dir, setup.export_dir)
    config.data.max_prompt_length = limit = max(bare.values())
    config.data.filter_overlong_prompts = True  # as examples/verl/envcraft_grpo.yaml sets it
    assert any(full[i] > limit for i in rows)
    # VERL's own filter never sees the tools: it keeps every row, also those the loop would cut
    assert len(RLHFDataset([str(path)], policy_tokenizer, config.data)) == len(rows)
    kept = EnvcraftRLHFDataset([str(path)], policy_tokenizer, config.data)
    assert sorted(kept[i]["extra_info"]["task_id"] for i in range(len(kept))) == sorted(
        i for i in rows if full[i] <= limit
    )
