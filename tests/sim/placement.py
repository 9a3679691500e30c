#!/usr/bin/env python3
"""A pool of draped boxes under many artists: queue waits of the placement rule.

python3 tests/sim/placement.py [--artists 200] [--boxes 10] [--threads 16] [--seed 1]

Discrete-event model of deploy/SCALING.md's studio: each artist alternates
thinking (exponential, mean --think minutes) and submitting one run of a
garment (frames uniform in 48..240, seconds per frame lognormal around
--frame-s, one solver thread per running session, as draped schedules one
frame of a session at a time). A new session goes to the box with the
fewest (queued + running) sessions per solver thread, then the most free
memory, then the fewest sessions: the rule libdrape applies with a
comma-separated DRAPE_SERVER. Each box runs at most --threads sessions at
once and queues the rest first come, first served. The wait of a run is the
time from its submission until its first frame starts. For comparison the
same arrivals are also placed at random (one box per artist picked without
looking, as a static assignment would).
"""
import argparse
import heapq
import random


def simulate(args, rule):
    rng = random.Random(args.seed)
    boxes = [{"running": 0, "queue": [], "mem": 0} for _ in range(args.boxes)]
    events = []  # (time, kind, artist or box, payload)
    seq = 0
    horizon = args.hours * 3600.0
    for a in range(args.artists):
        t = rng.expovariate(1.0 / (args.think * 60.0))
        heapq.heappush(events, (t, seq, "submit", a, None))
        seq += 1
    waits = []
    home = [rng.randrange(args.boxes) for _ in range(args.artists)]

    def start(b, now, job):
        nonlocal seq
        box = boxes[b]
        box["running"] += 1
        waits.append(now - job["submitted"])
        heapq.heappush(events, (now + job["work"], seq, "finish", b, job))
        seq += 1

    while events:
        now, _, kind, who, job = heapq.heappop(events)
        if kind == "submit":
            if now > horizon:
                continue
            frames = rng.randint(48, 240)
            per = rng.lognormvariate(0.0, 0.5) * args.frame_s
            job = {"submitted": now, "work": frames * per, "artist": who, "mem": frames * 0.05}
            if rule == "placement":
                def key(i):
                    bx = boxes[i]
                    load = (len(bx["queue"]) + bx["running"]) / args.threads
                    return (load, bx["mem"], len(bx["queue"]) + bx["running"], i)
                b = min(range(args.boxes), key=key)
            else:
                b = home[who]
            boxes[b]["mem"] += job["mem"]
            if boxes[b]["running"] < args.threads:
                start(b, now, job)
            else:
                boxes[b]["queue"].append(job)
        else:
            box = boxes[who]
            box["running"] -= 1
            box["mem"] -= job["mem"]
            if box["queue"]:
                start(who, now, box["queue"].pop(0))
            think = rng.expovariate(1.0 / (args.think * 60.0))
            heapq.heappush(events, (now + think, seq, "submit", job["artist"], None))
            seq += 1
    waits.sort()

    def pct(p):
        if not waits:
            return 0.0
        return waits[min(len(waits) - 1, int(p / 100.0 * len(waits)))]

    return len(waits), pct(50), pct(99), max(waits) if waits else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--artists", type=int, default=200)
    ap.add_argument("--boxes", type=int, default=10)
    ap.add_argument("--threads", type=int, default=8, help="solver threads per box")
    ap.add_argument("--think", type=float, default=5.0, help="mean minutes between an artist's runs")
    ap.add_argument("--frame-s", type=float, default=1.0, help="median seconds per frame")
    ap.add_argument("--hours", type=float, default=8.0, help="a working day")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(f"{args.artists} artists, {args.boxes} boxes x {args.threads} threads, think {args.think} min, "
          f"{args.frame_s} s/frame median, {args.hours} h")
    for rule in ("placement", "random"):
        n, p50, p99, mx = simulate(args, rule)
        print(f"{rule:10s} runs {n:6d}  queue wait p50 {p50:8.1f} s  p99 {p99:8.1f} s  max {mx:8.1f} s")


if __name__ == "__main__":
    main()
