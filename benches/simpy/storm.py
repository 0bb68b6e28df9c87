"""The retry storm of docs/examples/storm-150s.yaml as a SimPy model.

stormsim's whole-process time on that scenario is compared with this
model's (README "Speed"; `benches/simpy/compare.sh` times both side by
side). It is written the way a careful SimPy user would write it: one
process per logical request, the service as a shared object with a
bounded FIFO queue and a fixed number of workers, and the same semantics
as stormsim's model (README "The model"):

- Poisson arrivals at 1200/s for 150 s;
- one layer, 1 s per-attempt timeout, at most 4 attempts, capped
  exponential backoff (100 ms × 2^(n-1), cap 5 s) with full jitter,
  retrying timeouts, connection errors and 503;
- 32 workers, exponential service times of mean 20 ms, a FIFO queue of
  256 that sheds with 503 when full;
- a `down` incident from 60 s to 70 s: arriving attempts fail at once with
  a connection error, and the work queued or in service when it starts is
  lost (connection reset); a timed-out attempt's work keeps running
  (orphaned).

It prints the same totals as stormsim's summary.csv (logical requests,
succeeded, dependency attempts), which agree within sampling error: the
two use different random streams.

    pip install simpy==4.1.2
    python3 benches/simpy/storm.py [--seed N]
"""

import argparse
import collections
import random

import simpy

DURATION = 150.0
RATE = 1200.0
TIMEOUT = 1.0
MAX_ATTEMPTS = 4
BASE, MULTIPLIER, CAP = 0.1, 2.0, 5.0
WORKERS = 32
MEAN_SERVICE = 0.020
QUEUE = 256
DOWN = (60.0, 70.0)

OK, TIMED_OUT, CONNECTION, SHED = "ok", "timeout", "connection", "503"


class Job:
    __slots__ = ("done", "process")

    def __init__(self, env):
        self.done = env.event()
        self.process = None


class Service:
    """Workers, a bounded FIFO queue, and the outage."""

    def __init__(self, env, rng):
        self.env = env
        self.rng = rng
        self.busy = set()
        self.queue = collections.deque()
        self.down = False
        self.attempts = 0
        env.process(self.outage())

    def submit(self, job):
        self.attempts += 1
        if self.down:
            job.done.succeed(CONNECTION)
        elif len(self.busy) < WORKERS:
            self.start(job)
        elif len(self.queue) < QUEUE:
            self.queue.append(job)
        else:
            job.done.succeed(SHED)

    def start(self, job):
        self.busy.add(job)
        job.process = self.env.process(self.serve(job))

    def serve(self, job):
        try:
            yield self.env.timeout(self.rng.expovariate(1.0 / MEAN_SERVICE))
        except simpy.Interrupt:
            return
        self.busy.discard(job)
        if not job.done.triggered:
            job.done.succeed(OK)
        if self.queue:
            self.start(self.queue.popleft())

    def outage(self):
        yield self.env.timeout(DOWN[0])
        self.down = True
        lost = list(self.busy) + list(self.queue)
        self.busy.clear()
        self.queue.clear()
        for job in lost:
            if job.process is not None:
                job.process.interrupt()
            if not job.done.triggered:
                job.done.succeed(CONNECTION)
        yield self.env.timeout(DOWN[1] - DOWN[0])
        self.down = False


class Totals:
    def __init__(self):
        self.logical = 0
        self.succeeded = 0


def request(env, service, rng, totals):
    for attempt in range(1, MAX_ATTEMPTS + 1):
        job = Job(env)
        service.submit(job)
        timer = env.timeout(TIMEOUT, value=TIMED_OUT)
        fired = yield job.done | timer
        outcome = job.done.value if job.done in fired else TIMED_OUT
        if outcome == OK:
            totals.succeeded += 1
            return
        if attempt == MAX_ATTEMPTS:
            return
        delay = min(CAP, BASE * MULTIPLIER ** (attempt - 1))
        yield env.timeout(rng.uniform(0.0, delay))


def clients(env, service, rng, totals):
    while True:
        yield env.timeout(rng.expovariate(RATE))
        if env.now >= DURATION:
            return
        totals.logical += 1
        env.process(request(env, service, rng, totals))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    env = simpy.Environment()
    service = Service(env, rng)
    totals = Totals()
    env.process(clients(env, service, rng, totals))
    env.run(until=DURATION)
    print(f"logical_requests {totals.logical}")
    print(f"succeeded {totals.succeeded}")
    print(f"dependency_attempts {service.attempts}")


if __name__ == "__main__":
    main()
