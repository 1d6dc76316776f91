"""sf_trace.py — reading the built-in trace (SHARDFLOW_TRACE's PREFIX.rankN.json) for the
bench/ scripts: trace_top.py, sim_calibrate.py."""
import json
import sys


def load_events(path, prog):
    """The trace's events, or None after saying on stderr why PATH is not a trace."""
    try:
        with open(path) as f:
            return json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{prog}: {path}: not a shardflow trace ({e})", file=sys.stderr)
        return None
