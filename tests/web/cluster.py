"""A real Cohort cluster on loopback for tests: cohort-master (SQLite in a temporary
directory) and cohort-agents as subprocesses, plus a small REST client logged in as admin.

Every wait has a deadline and says what it waited for."""

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request


class TestFailure(Exception):
    pass


def wait_until(predicate, what, timeout=30.0, interval=0.2, retry_on=()):
    """Calls predicate() until it returns a truthy value (returned) or `timeout` seconds pass
    (TestFailure naming `what` and the last value seen). An exception of a type in `retry_on`
    counts as a falsy answer (a page element redrawn while it was read)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except retry_on as e:
            last = f"{type(e).__name__}"
        else:
            if last:
                return last
        time.sleep(interval)
    raise TestFailure(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


def free_port_range(width, taken=()):
    """A base port whose `width` successors were free a moment ago, below the kernel's
    ephemeral range (where the many client connections of a test would take them: a trial's
    rendezvous store then fails with "the port is in use")."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
    rng = random.Random()
    for _ in range(50):
        base = rng.randrange(10000, max(10001, ephemeral_low - width))
        if any(abs(base - other) < width for other in taken):
            continue  # another agent's range
        try:
            for p in range(base, base + width):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
    raise TestFailure(f"no {width} consecutive free ports found")


class Cluster:
    def __init__(self, bin_dir):
        self.bin_dir = bin_dir
        self.dir = tempfile.mkdtemp(prefix="cohort_web_ui_")
        self.procs = []
        self.url = None
        self.token = None
        self.password = None
        self.port_bases = []  # the agents' port ranges, 10 ports each

    def _spawn(self, name, argv):
        log = open(os.path.join(self.dir, f"{name}.log"), "wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append((name, proc, log))
        return proc

    def log_of(self, name):
        with open(os.path.join(self.dir, f"{name}.log"), errors="replace") as f:
            return f.read()

    def start_master(self):
        data = os.path.join(self.dir, "master")
        self._spawn("master", [os.path.join(self.bin_dir, "cohort-master"), "--port", "0",
                               "--data-dir", data, "--agent-timeout", "5"])

        def listening():
            m = re.search(r"listening on (http://\S+)", self.log_of("master"))
            return m.group(1) if m else None

        self.url = wait_until(listening, "cohort-master to listen", 30)
        with open(os.path.join(data, "admin-password")) as f:
            self.password = f.read().strip()
        self.token = self.call("POST", "/api/v1/auth/login",
                               {"username": "admin", "password": self.password})["token"]

    def start_agent(self, agent_id, slots):
        base = free_port_range(10, self.port_bases)
        self.port_bases.append(base)
        self._spawn(agent_id, [
            os.path.join(self.bin_dir, "cohort-agent"), "--master", self.url, "--id", agent_id,
            "--slots", str(slots), "--port-range", f"{base}-{base + 9}",
            "--work-dir", os.path.join(self.dir, agent_id),
            "--secret-file", os.path.join(self.dir, "master", "agent-secret")])
        wait_until(lambda: any(a["id"] == agent_id and a["connected"]
                               for a in self.call("GET", "/api/v1/agents")["agents"]),
                   f"agent {agent_id} to connect", 30)

    def call(self, method, path, body=None):
        """The master's JSON answer to `method path`; TestFailure with its error otherwise."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raise TestFailure(f"{method} {path}: HTTP {e.code}: {e.read()[:500]!r}") from None

    def raw(self, path):
        """(status, headers, body bytes) of GET `path`, without credentials."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def cli(self, *args):
        """`cohort -m URL args...` as the admin: the finished process (stdout, stderr, code)."""
        env = dict(os.environ, COHORT_USER="admin", COHORT_PASSWORD=self.password,
                   XDG_CONFIG_HOME=os.path.join(self.dir, "config"))
        return subprocess.run([os.path.join(self.bin_dir, "cohort"), "-m", self.url, *args],
                              env=env, capture_output=True, text=True, timeout=60)

    def create_experiment(self, config, context):
        out = self.cli("experiment", "create", config, context)
        m = re.search(r"created experiment (\d+)", out.stdout)
        if out.returncode != 0 or not m:
            raise TestFailure(f"cohort experiment create {config} failed ({out.returncode}): "
                              f"{out.stdout}{out.stderr}")
        return int(m.group(1))

    def stop(self, keep_dir=False):
        for name, proc, log in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            log.close()
        if not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
