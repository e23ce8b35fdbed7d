"""The corpus: tasks composed in shards, statistics, the envcraft run pipeline, report, exports."""
