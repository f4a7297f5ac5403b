#!/usr/bin/env python3
"""Runs a `moe-opt sweep` on Ray: one Ray task per shard, then `moe-opt merge` of the shards.

    python scripts/ray_sweep.py SPEC.toml --out DIR --shards N [--address ADDR]
        [--jobs-per-shard K] [--bin PATH] [--num-cpus C] [--no-shared-fs]

Shard i (0 <= i < N) is the Ray task `moe-opt sweep SPEC --shard i/N --out DIR/shard-i --resume
--jobs K`, asking Ray for K CPUs; when every shard has finished, `moe-opt merge DIR/shard-*
--out DIR/merged` (itself a Ray task, so the driver needs no binary) writes DIR/merged/results.csv,
the same bytes as a single-process `moe-opt sweep SPEC` (tested by scripts/test_ray_sweep.py).
Needs Ray (requirements-ray.txt; `source scripts/nb-env.sh ray` installs it into .tools/ray-venv).

Where Ray runs:
  * no --address and no RAY_ADDRESS: a new Ray instance is started on this machine for this run
    (--num-cpus C limits it to C CPUs; default all) and stopped at the end;
  * --address auto: the running cluster this machine belongs to (`ray start --head` here, or
    a node of the cluster);
  * --address ray://HOST:10001: a remote cluster's head through Ray Client (the `client`
    extra of requirements-ray.txt); the driver may then be a laptop outside the cluster;
  * RAY_ADDRESS=...: the same as --address, when --address is not given.

What every node needs: the binary at --bin (default $MOE_OPT_BIN, else target/debug/moe-opt of
this repository, made absolute) and, at best, the spec at its absolute path (with the base
`config = ...` file it may name, relative to the spec). Put the repository on a shared
filesystem mounted at the same path on every node, or install the binary at the same path on
each (build it on, or for, the nodes' platform: `cargo build --release`, then --bin
.../target/release/moe-opt). A spec that a node cannot read is sent with the task and written
to a temporary folder there (enough unless it names a base config file).

Outputs and resuming. The driver writes a random token into DIR/.ray-sweep-token; a task that
reads the same token knows DIR is shared with the driver (a shared filesystem, or the local
instance) and runs in DIR/shard-i itself. Otherwise (or with --no-shared-fs) it runs in a
temporary folder on its node, seeded with the driver's copy of DIR/shard-i, and streams every
cell it finishes back to the driver, which appends it to DIR/shard-i/results.jsonl at once and
writes the shard's final files at the end. Either way, DIR/shard-i/results.jsonl on the driver's
side gains each finished cell within a second: re-running the same command after an
interruption (the driver, a node, the cluster) resumes every shard with --resume, redoing no
finished cell (without a shared filesystem, at most those finished in the last second before
the interruption) and losing none. Ctrl-C and SIGTERM stop the driver cleanly (a local Ray
instance stops, and every moe-opt ends with its Ray worker). The spec must stay the same: moe-opt
refuses to resume a folder of another spec.

Exit code 0 when every shard finished and the merge has every cell; 1 otherwise (the failing
shards named, with the end of moe-opt's output); 2 on bad arguments.
"""
import argparse
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARD_FILES = ("sweep.json", "results.jsonl", "results.csv")


# ---------------------------------------------------------------------------------------------
# What runs on the nodes. Plain functions (Ray ships them with the tasks); imports inside.


def _die_with_parent():
    """In the child: SIGTERM when the Ray worker that started it dies (Linux), so an interrupted
    run leaves no moe-opt behind."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _complete_lines(text):
    """The complete, parseable lines of a results.jsonl text, by cell index (a torn or
    unparseable line, i.e. an interrupted append, is dropped)."""
    cells = {}
    for line in text.split("\n")[:-1]:  # the piece after the last newline is torn (or empty)
        if not line.strip():
            continue
        try:
            cells[json.loads(line)["cell"]["index"]] = line
        except (ValueError, KeyError, TypeError):
            continue
    return cells


def _tail(path, limit=2000):
    try:
        return Path(path).read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def shard_task(index, count, binary, spec_path, spec_text, out_dir, token, seed, jobs, force_unshared):
    """Runs shard index/count. Yields messages (dicts): {"kind": "start", "shared", "host"},
    {"kind": "header", "text"} (sweep.json), {"kind": "cell", "index", "line"} for every cell
    finished (or already there), and last {"kind": "done", "files", "log"}; raises on failure."""
    import shutil
    import subprocess
    import tempfile

    host = socket.gethostname()
    if not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        raise RuntimeError(f"{host}: no executable moe-opt at {binary} (see --bin)")
    token_file = Path(out_dir) / ".ray-sweep-token"
    shared = not force_unshared and token_file.is_file() and token_file.read_text().strip() == token
    scratch = Path(tempfile.mkdtemp(prefix=f"moe-opt-shard-{index}-"))
    try:
        if shared:
            work = Path(out_dir) / f"shard-{index}"
        else:
            work = scratch / f"shard-{index}"
            work.mkdir()
            for name, text in seed.items():  # the driver's copy: --resume skips what it holds
                (work / name).write_text(text)
        if not os.path.isfile(spec_path):
            spec_path = str(scratch / Path(spec_path).name)
            Path(spec_path).write_text(spec_text)
        yield {"kind": "start", "shared": shared, "host": host}

        log = scratch / "moe-opt.log"
        cmd = [binary, "sweep", spec_path, "--shard", f"{index}/{count}", "--out", str(work),
               "--resume", "--jobs", str(jobs)]
        sent, header_sent, offset = set(), False, 0
        results = work / "results.jsonl"
        with open(log, "w") as log_file:
            proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
            try:
                while True:
                    running = proc.poll() is None
                    if not header_sent and (work / "sweep.json").is_file():
                        text = (work / "sweep.json").read_text()
                        if text.endswith("\n"):  # written whole
                            header_sent = True
                            yield {"kind": "header", "text": text}
                    if header_sent and results.is_file():
                        size = results.stat().st_size
                        if size < offset:  # moe-opt rewrote the file (start or end): read it anew
                            offset = 0
                        if size > offset:
                            with open(results) as f:
                                f.seek(offset)
                                chunk = f.read()
                            end = chunk.rfind("\n") + 1  # complete lines only
                            offset += len(chunk[:end].encode())
                            for cell, line in sorted(_complete_lines(chunk[:end]).items()):
                                if cell not in sent:
                                    sent.add(cell)
                                    yield {"kind": "cell", "index": cell, "line": line}
                    if not running:
                        break
                    time.sleep(0.5)
            finally:
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait()
        if proc.returncode != 0:
            raise RuntimeError(f"{host}: {' '.join(cmd)} failed ({proc.returncode}):\n{_tail(log)}")
        files = {name: (work / name).read_text() for name in SHARD_FILES}
        yield {"kind": "done", "files": files, "log": _tail(log, 500)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def merge_task(binary, shards):
    """`moe-opt merge` of the shards' files (a list of {name: text}) in a temporary folder;
    returns the merged files and moe-opt's output."""
    import shutil
    import subprocess
    import tempfile

    host = socket.gethostname()
    if not os.path.isfile(binary):
        raise RuntimeError(f"{host}: no executable moe-opt at {binary} (see --bin)")
    scratch = Path(tempfile.mkdtemp(prefix="moe-opt-merge-"))
    try:
        dirs = []
        for i, files in enumerate(shards):
            d = scratch / f"shard-{i}"
            d.mkdir()
            for name, text in files.items():
                (d / name).write_text(text)
            dirs.append(str(d))
        merged = scratch / "merged"
        p = subprocess.run([binary, "merge", *dirs, "--out", str(merged)], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{host}: moe-opt merge failed ({p.returncode}):\n{p.stderr}")
        return {name: (merged / name).read_text() for name in SHARD_FILES}, p.stdout
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The driver.


def write_atomic(path, text):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_seed(shard_dir):
    """The driver's copy of a shard folder, to seed a task on a node that does not share it;
    its results.jsonl is cleaned of a torn last line first (appends follow it)."""
    seed = {}
    if (shard_dir / "sweep.json").is_file():
        seed["sweep.json"] = (shard_dir / "sweep.json").read_text()
    if (shard_dir / "results.jsonl").is_file():
        lines = _complete_lines((shard_dir / "results.jsonl").read_text())
        text = "".join(line + "\n" for _, line in sorted(lines.items()))
        write_atomic(shard_dir / "results.jsonl", text)
        seed["results.jsonl"] = text
    return seed, len(seed.get("results.jsonl", "").splitlines())


class Shard:
    """The driver's side of one shard: consumes its task's messages in a thread."""

    def __init__(self, index, count, out):
        self.index, self.count = index, count
        self.dir = out / f"shard-{index}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.seed, self.had = read_seed(self.dir)
        self.shared = None
        self.host = "?"
        self.cells = set()
        self.error = None
        self.done = False
        self.started = time.monotonic()

    def consume(self, generator, ray):
        try:
            for ref in generator:
                self.handle(ray.get(ref))
        except Exception as e:  # the task raised, or its node died beyond Ray's retries
            self.error = str(e)

    def handle(self, msg):
        kind = msg["kind"]
        if kind == "start":
            self.shared, self.host = msg["shared"], msg["host"]
        elif kind == "header" and not self.shared:
            write_atomic(self.dir / "sweep.json", msg["text"])
        elif kind == "cell":
            if not self.shared and msg["index"] not in self.cells:
                with open(self.dir / "results.jsonl", "a") as f:
                    f.write(msg["line"] + "\n")
                    f.flush()
            self.cells.add(msg["index"])
        elif kind == "done":
            if not self.shared:
                for name in SHARD_FILES:
                    write_atomic(self.dir / name, msg["files"][name])
            self.files = msg["files"]
            self.done = True
            took = time.monotonic() - self.started
            print(f"shard {self.index}/{self.count}: {len(self.cells)} cells ({self.had} already there) "
                  f"in {took:.1f} s on {self.host}{'' if self.shared else ' (streamed)'}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[5:]))
    p.add_argument("spec", type=Path, help="the sweep spec (TOML)")
    p.add_argument("--out", type=Path, required=True, help="output folder: shard-i/ per shard, merged/")
    p.add_argument("--shards", type=int, required=True, help="number of shards (Ray tasks)")
    p.add_argument("--address", help="Ray address: auto, ray://HOST:10001, HOST:6379 (default: $RAY_ADDRESS, else a local instance)")
    p.add_argument("--jobs-per-shard", type=int, default=1, help="moe-opt --jobs and Ray CPUs of each shard (default 1)")
    p.add_argument("--bin", help="moe-opt on the nodes (default: $MOE_OPT_BIN, else target/debug/moe-opt of this repository)")
    p.add_argument("--num-cpus", type=int, help="CPUs of a local Ray instance started by this run (default: all)")
    p.add_argument("--no-shared-fs", action="store_true", help="stream results to the driver even if the nodes see --out")
    args = p.parse_args()
    if args.shards < 1 or args.jobs_per_shard < 1:
        p.error("--shards and --jobs-per-shard must be at least 1")
    if not args.spec.is_file():
        p.error(f"{args.spec}: no such spec file")
    try:
        import ray
    except ImportError:
        sys.exit("ray_sweep.py: Ray is not installed here: `source scripts/nb-env.sh ray` installs it into "
                 ".tools/ray-venv (requirements-ray.txt); run this script with $MOE_RAY_PYTHON")

    binary = os.path.abspath(args.bin or os.environ.get("MOE_OPT_BIN") or ROOT / "target" / "debug" / "moe-opt")
    spec_path = str(args.spec.resolve())
    spec_text = args.spec.read_text()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    write_atomic(out / ".ray-sweep-token", token + "\n")

    address = args.address or os.environ.get("RAY_ADDRESS") or None
    init = dict(address=address, log_to_driver=True, configure_logging=False)
    if address is None:
        # "local": always a new instance, even if `ray start` runs on this machine (plain
        # ray.init() would join that one).
        init.update(address="local", include_dashboard=False)
        if args.num_cpus:
            init["num_cpus"] = args.num_cpus
    elif args.num_cpus:
        p.error("--num-cpus applies only to a local instance started by this run (no --address)")
    ray.init(**init)
    print(f"ray: {address or 'local instance'}, {ray.cluster_resources().get('CPU', 0):g} CPUs; "
          f"{args.shards} shards of {args.spec} into {out}", flush=True)

    remote_shard = ray.remote(shard_task).options(num_cpus=args.jobs_per_shard, max_retries=2, retry_exceptions=False)
    shards = [Shard(i, args.shards, out) for i in range(args.shards)]
    threads = []
    for s in shards:
        gen = remote_shard.remote(s.index, args.shards, binary, spec_path, spec_text, str(out), token,
                                  s.seed, args.jobs_per_shard, args.no_shared_fs)
        t = threading.Thread(target=s.consume, args=(gen, ray), daemon=True)
        t.start()
        threads.append(t)
    # SIGTERM (kill, a scheduler's stop) ends the run as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=0.5)
    except KeyboardInterrupt:
        print("\ninterrupted: what finished is kept; run the same command again to resume", file=sys.stderr)
        ray.shutdown()
        return 130

    failed = [s for s in shards if not s.done]
    for s in failed:
        print(f"shard {s.index}/{s.count} failed: {s.error or 'no result'}", file=sys.stderr)
    if failed:
        print("re-run the same command to resume (finished cells are kept)", file=sys.stderr)
        ray.shutdown()
        return 1

    merged_files, _ = ray.get(
        ray.remote(merge_task).options(num_cpus=1).remote(binary, [s.files for s in shards]))
    merged = out / "merged"
    merged.mkdir(exist_ok=True)
    for name in SHARD_FILES:
        write_atomic(merged / name, merged_files[name])
    ray.shutdown()
    header = json.loads(merged_files["sweep.json"])
    present = len(merged_files["results.jsonl"].splitlines())
    print(f"merged: {present} of {header['cells']} cells in {merged / 'results.csv'}")
    return 0 if present == header["cells"] else 1


if __name__ == "__main__":
    sys.exit(main())
