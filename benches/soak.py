#!/usr/bin/env python3
"""Soak schedlab: random presets with random knobs, ended normally, by SIGTERM or by
SIGKILL at random moments, and fuzzed preset files. After every step it checks that no
worker is left running, that every system knob is back, and that nothing panicked; at
the end it prints the figures (runs, kills, orphans, knobs left changed, panics).

    benches/soak.py [--minutes 5] [--seed N] [--bin target/release/schedlab]

Run as root on a machine you may load; it changes RT throttling, the RR timeslice and
autogroup (always through schedlab, which journals and restores them) and puts every
value back itself if schedlab ever did not.
"""

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

KNOBS = {
    "/proc/sys/kernel/sched_rt_runtime_us": None,
    "/proc/sys/kernel/sched_rt_period_us": None,
    "/proc/sys/kernel/sched_rr_timeslice_ms": None,
    "/proc/sys/kernel/sched_autogroup_enabled": None,
    "/sys/fs/cgroup/cpu/cpu.rt_runtime_us": None,
}
PRESETS = ["pipe-wakeup", "pipe-affinity", "yield-latency", "rt-throttle",
           "nice-ladder", "parallel-build", "cgroup-fairness"]
TASK_SETS = {
    "pipe-wakeup": ["writer.policy=batch", "reader.policy=batch", "reader.cpus=all",
                    "writer.nice=5", "reader.poll_stdin=on", "writer.bytes=4096"],
    "pipe-affinity": ["producer.cpus=0", "consumer.cpus=1", "producer.nice=-5"],
    "yield-latency": ["hog.count=4", "yield.process=yielders", "hog.nice=0"],
    "rt-throttle": ["fair.nice=0", "fifo.priority=50", "fair.policy=batch"],
    "nice-ladder": ["busy.nice=-20..20:4", "busy.nice=0/5/10", "busy.cpus=0"],
    "parallel-build": ["build.jobs=4", "build.compile_jobs=4"],
    "cgroup-fairness": ["cgroup.crowd.weight=400", "crowd.count=2"],
}
MARKERS = ("__worker", "__exec", "__job")


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def leftovers():
    """Processes of schedlab's workloads still alive (zombies do not count)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(m.encode() in cmd for m in MARKERS):
            out.append(int(pid))
    return out


def schedlab_running():
    for pid in os.listdir("/proc"):
        if pid.isdigit() and read(f"/proc/{pid}/comm") == "schedlab":
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
            if not any(m.encode() in cmd for m in MARKERS):
                return True
    return False


def fuzz(text, rng):
    lines = text.splitlines()
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        if op < 0.3 and lines:
            del lines[rng.randrange(len(lines))]
        elif op < 0.6 and lines:
            i = rng.randrange(len(lines))
            lines[i] = lines[i].replace("=", rng.choice(["==", "= [", "= 99999999999", "= -"]), 1)
        elif op < 0.8:
            lines.insert(rng.randrange(len(lines) + 1),
                         rng.choice(["count = 300", "nice = \"0..900\"", "[[task]]", "cpus = \"0-999\"",
                                     "policy = \"fifo\"", "params = { bytes = -1 }", "x = 1"]))
        else:
            b = bytearray("\n".join(lines), "utf-8")
            if b:
                b[rng.randrange(len(b))] = rng.randrange(32, 127)
            lines = b.decode("utf-8", "replace").splitlines()
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--bin", default="target/release/schedlab")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak: run as root (it exercises RT and system knobs)")
    rng = random.Random(args.seed)
    for k in KNOBS:
        KNOBS[k] = read(k)
    stats = dict(runs=0, normal=0, sigterm=0, sigkill=0, fuzzed=0, orphans=0,
                 knobs_left=0, panics=0, bad_exit=0)
    work = tempfile.mkdtemp(prefix="soak-")
    deadline = time.time() + args.minutes * 60
    print(f"soak: seed {args.seed}, {args.minutes} min", flush=True)
    while time.time() < deadline:
        stats["runs"] += 1
        step = rng.random()
        env = dict(os.environ)
        if step < 0.2:
            # A fuzzed preset: parsed, and run if it parses.
            src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "presets",
                               rng.choice(PRESETS) + ".toml")
            path = os.path.join(work, "fuzz.toml")
            with open(src) as f, open(path, "w") as g:
                g.write(fuzz(f.read(), rng))
            stats["fuzzed"] += 1
            cmd = [args.bin, "run", path, "--duration", "300ms"]
            how = "normal"
        else:
            preset = rng.choice(PRESETS)
            cmd = [args.bin, "run", preset, "--duration", f"{rng.uniform(0.3, 1.5):.2f}s"]
            for s in rng.sample(TASK_SETS[preset], rng.randint(0, 2)):
                cmd += ["--set", s]
            if rng.random() < 0.4:
                cmd += ["--set", rng.choice(["sys.rt_runtime_us=%d" % rng.randrange(500000, 950001, 50000),
                                             "sys.rr_timeslice_ms=%d" % rng.choice([10, 50, 100]),
                                             "sys.autogroup=%d" % rng.choice([0, 1])])]
            how = rng.choice(["normal", "normal", "sigterm", "sigkill"])
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        if how != "normal":
            time.sleep(rng.uniform(0.05, 1.0))
            p.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
        try:
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            print(f"soak: {cmd} hung and was killed", flush=True)
        stats[how] += 1
        err = err.decode("utf-8", "replace")
        if "panicked" in err or p.returncode == 101:
            stats["panics"] += 1
            print(f"soak: PANIC in {cmd}: {err.strip()}", flush=True)
        elif how == "normal" and p.returncode not in (0, 1, 2, 3, 4):
            stats["bad_exit"] += 1
            print(f"soak: exit {p.returncode} from {cmd}: {err.strip()[:300]}", flush=True)
        if how == "sigkill":
            # What a user does after a crash: the next start or `schedlab restore`.
            subprocess.run([args.bin, "restore" if rng.random() < 0.5 else "presets"],
                           capture_output=True)
        time.sleep(0.1)
        left = leftovers()
        if left:
            stats["orphans"] += len(left)
            print(f"soak: {len(left)} orphans after {how} {cmd}: {left}", flush=True)
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if not schedlab_running():
            for k, v in KNOBS.items():
                now = read(k)
                if v is not None and now != v:
                    stats["knobs_left"] += 1
                    print(f"soak: {k} left at {now} (was {v}) after {how} {cmd}", flush=True)
    # Put back anything a failure left (sysctl raised first when raising).
    subprocess.run([args.bin, "restore"], capture_output=True)
    for k in ("/proc/sys/kernel/sched_rt_period_us", "/proc/sys/kernel/sched_rt_runtime_us",
              "/sys/fs/cgroup/cpu/cpu.rt_runtime_us", "/proc/sys/kernel/sched_rr_timeslice_ms",
              "/proc/sys/kernel/sched_autogroup_enabled"):
        if KNOBS[k] is not None and read(k) != KNOBS[k]:
            with open(k, "w") as f:
                f.write(KNOBS[k])
    print("soak: " + ", ".join(f"{k} {v}" for k, v in stats.items()), flush=True)
    sys.exit(1 if stats["orphans"] or stats["knobs_left"] or stats["panics"] else 0)


if __name__ == "__main__":
    main()
