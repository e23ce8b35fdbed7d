#!/usr/bin/env bash
# GRPO steps with VERL on a GPU machine: export a task set for VERL and train on it with
# examples/verl/envcraft_grpo.yaml (the paper's Table 17 optimizer). It cannot run on a CPU:
# VERL's rollout needs vLLM (or SGLang) on a GPU.
#
#   pip install 'envcraft[verl]' vllm            # on the GPU machine, with its CUDA torch
#   examples/verl_grpo.sh out/run/tasks           # TASKS: a task-set directory (tasks.jsonl)
#   MODEL=Qwen/Qwen3-4B examples/verl_grpo.sh out/run/tasks trainer.total_training_steps=20
#
# Extra arguments are hydra overrides passed to VERL (e.g. trainer.n_gpus_per_node=8).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tasks="${1:?usage: verl_grpo.sh TASKS_DIR [hydra overrides...]}"
shift
model="${MODEL:-Qwen/Qwen2.5-1.5B-Instruct}"
data="${OUT:-out/verl}/data"

envcraft export --tasks "$tasks" --format verl --out "$data"
python -m verl.trainer.main_ppo \
    --config-path "$here/verl" --config-name envcraft_grpo \
    data.train_files="$data/train.parquet" \
    data.val_files="$data/val.parquet" \
    actor_rollout_ref.model.path="$model" \
    actor_rollout_ref.rollout.agent.agent_loop_config_path="$data/agent_loop.yaml" \
    "$@"
