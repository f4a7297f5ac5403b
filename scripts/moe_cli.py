"""How the test scripts run the moe-opt binary: one place for the call and its error."""

import subprocess


def run(moe_opt, *args):
    """The standard output of `moe-opt ARGS`; a RuntimeError with the command and its stderr
    when it exits non-zero."""
    args = [str(a) for a in args]
    out = subprocess.run([str(moe_opt), *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"moe-opt {' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
    return out.stdout
