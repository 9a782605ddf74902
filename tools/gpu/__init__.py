"""The GPU check's Python (tools/gpu_check.sh runs check.py): the table, its steps, the tolerances."""
