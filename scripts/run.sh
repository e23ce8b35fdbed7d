#!/usr/bin/env bash
# The main job on built-in defaults: check the library, synthesize and validate tasks, export, report.
source "$(dirname "$0")/_venv.sh"
exec envcraft run "$@"
